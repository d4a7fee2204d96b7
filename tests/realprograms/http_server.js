// tests/realprograms/http_server.js - the HTTP server nodejs.sh runs:
// GET / answers a page held in memory, /file reads it from disk through
// libuv's thread pool, /timer answers after a 5 ms timer with a count,
// POST answers the md5 of the body.  SIGTERM closes the server and exits.
// Usage: node http_server.js PORT PAGEFILE
'use strict';
const http = require('http');
const crypto = require('crypto');
const fs = require('fs');

const port = Number(process.argv[2]);
const file = process.argv[3];
const page = fs.readFileSync(file);
let timers = 0;

const server = http.createServer((req, res) => {
  if (req.method === 'POST') {
    const hash = crypto.createHash('md5');
    req.on('data', (chunk) => hash.update(chunk));
    req.on('end', () => res.end(`post ${req.url} ${hash.digest('hex')}  -\n`));
  } else if (req.url === '/timer') {
    setTimeout(() => res.end(`timer ${++timers}\n`), 5);
  } else if (req.url === '/file') {
    fs.readFile(file, (err, data) => res.end(err ? `error ${err.code}\n` : data));
  } else {
    res.end(page);
  }
});
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
