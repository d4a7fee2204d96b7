// thread_exit.cpp - the pthread key behind thread_exit_arm() (see
// thread_exit.h).
#include "core/thread_exit.h"

#include <pthread.h>

namespace uepoll::core {

namespace {

pthread_once_t g_once = PTHREAD_ONCE_INIT;
pthread_key_t g_key;
bool g_key_ok = false;  // written once under g_once

thread_local bool t_armed = false;

void run_hooks(void*) {
  t_armed = false;  // a later uepoll call in another key's destructor re-arms
  epoll::item_cache_thread_exit();
  epoll::watches_thread_exit();
  epoll::topology_thread_exit();
  waiter_thread_exit();
  vclock::thread_exit();
  reclaim::thread_exit();  // after those: they may still have retired objects
  fork_gate_thread_exit();  // last: the hooks above take uepoll locks
}

void make_key() { g_key_ok = pthread_key_create(&g_key, &run_hooks) == 0; }

}  // namespace

void thread_exit_arm() noexcept {
  if (t_armed) return;
  pthread_once(&g_once, &make_key);
  // Any non-null value makes the destructor run; setting it needs no
  // memory for one of the process's first 32 keys.
  if (g_key_ok && pthread_setspecific(g_key, &g_key) == 0) t_armed = true;
}

}  // namespace uepoll::core
