// item_index_test.cpp - epoll::ItemIndex (src/epoll/item_index.h), the
// open-addressing index of an instance shard, from inside: random
// insert/erase/find against a model, and a table kept from growing
// (injected ENOMEM) until one slot is left, where runs are long enough
// that displacements saturate at 15 and wrap around the end of the array.
// Links against the static library's internal symbols.  The keys' files
// are fake addresses: the index hashes and compares them, never reads them.
#include <gtest/gtest.h>

#include "core/alloc.h"
#include "epoll/item.h"
#include "epoll/item_index.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

namespace {

using uepoll::core::File;
using uepoll::epoll::Item;
using uepoll::epoll::ItemIndex;
using uepoll::epoll::item_key_hash;

File* fake_file(int i) { return reinterpret_cast<File*>(static_cast<uintptr_t>(0x10000 + 64 * i)); }

struct Pool {
  explicit Pool(int n) : items(new Item[static_cast<size_t>(n)]) {
    for (int i = 0; i < n; ++i) {
      items[i].file = fake_file(i % 7);
      items[i].fd = i / 7;
    }
  }
  std::unique_ptr<Item[]> items;
};

uint64_t key_hash(const Item& it) { return item_key_hash(it.file, it.fd); }

void expect_model(const ItemIndex& ix, const Pool& p, const std::vector<bool>& in, int n) {
  uint32_t count = 0;
  for (int i = 0; i < n; ++i) {
    const Item& it = p.items[i];
    Item* got = ix.find(key_hash(it), it.file, it.fd);
    ASSERT_EQ(got, in[i] ? &p.items[i] : nullptr) << "key " << i;
    count += in[i];
  }
  ASSERT_EQ(ix.size(), count);
  uint32_t visited = 0;
  ix.for_each([&](Item* it) {
    ASSERT_TRUE(in[static_cast<size_t>(it - p.items.get())]);
    ++visited;
  });
  ASSERT_EQ(visited, count);
}

TEST(ItemIndex, ItemsAreSixteenByteAligned) {
  Pool p(3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(reinterpret_cast<uintptr_t>(&p.items[i]) % 16, 0u);
  EXPECT_EQ(sizeof(Item), 80u);
}

TEST(ItemIndex, RandomOperationsMatchAModel) {
  constexpr int kKeys = 3000;
  Pool p(kKeys);
  ItemIndex ix;
  std::vector<bool> in(kKeys, false);
  std::mt19937 rng(12345);
  for (int step = 0; step < 60000; ++step) {
    const int k = static_cast<int>(rng() % kKeys);
    Item* it = &p.items[k];
    const uint64_t h = key_hash(*it);
    if (!in[k]) {
      ASSERT_EQ(ix.find(h, it->file, it->fd), nullptr);
      ASSERT_TRUE(ix.reserve());
      ix.insert(h, it);
      in[k] = true;
    } else {
      ASSERT_EQ(ix.find(h, it->file, it->fd), it);
      ix.erase(h, it);
      in[k] = false;
      ASSERT_EQ(ix.find(h, it->file, it->fd), nullptr);
    }
    if (step % 5000 == 0) expect_model(ix, p, in, kKeys);
  }
  expect_model(ix, p, in, kKeys);
  // Erasing what is not there changes nothing.
  for (int k = 0; k < kKeys; ++k)
    if (!in[k]) ix.erase(key_hash(p.items[k]), &p.items[k]);
  expect_model(ix, p, in, kKeys);
}

// Growth refused (ENOMEM) from 40 items on: the index fills its table up to
// one empty slot (reserve() keeps one, then says no), with runs longer than
// 15.  Then every item is erased in random order, the rest checked
// after each erase.
TEST(ItemIndex, FullTableWithoutGrowth) {
  constexpr int kKeys = 400;
  Pool p(kKeys);
  ItemIndex ix;
  std::vector<bool> in(kKeys, false);
  int k = 0;
  for (; k < 40; ++k) {
    ASSERT_TRUE(ix.reserve());
    ix.insert(key_hash(p.items[k]), &p.items[k]);
    in[k] = true;
  }
  auto& stats = uepoll::core::alloc_stats();
  for (;; ++k) {
    ASSERT_LT(k, kKeys);
    stats.fail_after.store(0);  // the next allocation (a growth) fails
    const bool ok = ix.reserve();
    if (!ok) break;
    ix.insert(key_hash(p.items[k]), &p.items[k]);
    in[k] = true;
  }
  stats.fail_after.store(-1);
  const uint32_t full = ix.size();
  EXPECT_GE(full, 40u);
  expect_model(ix, p, in, kKeys);
  // The index had room for `full` items and one empty slot; growth works
  // again once allocation does.
  ASSERT_TRUE(ix.reserve());
  ix.insert(key_hash(p.items[k]), &p.items[k]);
  in[k] = true;
  expect_model(ix, p, in, kKeys);

  std::vector<int> order;
  for (int i = 0; i < kKeys; ++i)
    if (in[i]) order.push_back(i);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  for (int i : order) {
    ix.erase(key_hash(p.items[i]), &p.items[i]);
    in[i] = false;
    expect_model(ix, p, in, kKeys);
  }
  EXPECT_EQ(ix.size(), 0u);
}

// Tables of a few sizes kept nearly full (growth mostly refused): probes
// and shifts wrap around the array's end.
TEST(ItemIndex, NearlyFullSmallTablesStayConsistent) {
  auto& stats = uepoll::core::alloc_stats();
  for (int seed = 0; seed < 200; ++seed) {
    Pool p(64);
    ItemIndex ix;
    std::vector<bool> in(64, false);
    std::mt19937 rng(static_cast<unsigned>(seed));
    ASSERT_TRUE(ix.reserve());  // the first table (4 slots)
    for (int step = 0; step < 200; ++step) {
      const int k = static_cast<int>(rng() % 64);
      Item* it = &p.items[k];
      const uint64_t h = key_hash(*it);
      if (in[k]) {
        ix.erase(h, it);
        in[k] = false;
      } else {
        if (rng() % 16) stats.fail_after.store(0);  // mostly no growth
        const bool ok = ix.reserve();
        stats.fail_after.store(-1);
        if (!ok) continue;
        ix.insert(h, it);
        in[k] = true;
      }
      expect_model(ix, p, in, 64);
    }
  }
}

}  // namespace
