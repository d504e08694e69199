// SPDX-License-Identifier: BSD-3-Clause
// naa::api::HandleTable: the ids behind naa_handle. Only an id the table handed out and has not
// taken back may resolve; zeroed, stale, corrupted and foreign ids must all miss.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "api/handle_table.hpp"

using Table = naa::api::HandleTable<int>;

namespace {

// The id layout handle_table.hpp documents: salt << 48 | generation << 32 | (slot index + 1).
constexpr uint64_t kIndexMask = 0xffffffffu;
constexpr unsigned kGenerationShift = 32, kSaltShift = 48;

void insert_find_remove(void **) {
  Table table;
  auto a = std::make_shared<int>(1), b = std::make_shared<int>(2);
  const uint64_t id_a = table.insert(a), id_b = table.insert(b);
  assert_true(id_a != id_b);
  assert_ptr_equal(table.find(id_a).get(), a.get());
  assert_ptr_equal(table.find(id_b).get(), b.get());

  assert_ptr_equal(table.remove(id_a).get(), a.get());
  assert_null(table.find(id_a).get());
  assert_null(table.remove(id_a).get());
  assert_ptr_equal(table.find(id_b).get(), b.get());
  assert_ptr_equal(table.remove(id_b).get(), b.get());
  assert_null(table.find(id_b).get());
}

// 16-bit generations would repeat after 65535 reuses of a slot; the table retires the slot
// instead, so a stale id can never name a live object again.
void stale_id_never_revives(void **) {
  Table table;
  const uint64_t stale = table.insert(std::make_shared<int>(0));
  table.remove(stale);
  for (int i = 0; i < 70000; ++i) {
    const uint64_t id = table.insert(std::make_shared<int>(i));
    assert_true(id != stale);
    assert_null(table.find(stale).get());
    table.remove(id);
  }
}

void zero_is_never_an_id(void **) {
  Table table;
  assert_null(table.find(0).get());
  const uint64_t id = table.insert(std::make_shared<int>(1));
  assert_true(id != 0);
  assert_null(table.find(0).get());
  assert_null(table.remove(0).get());
  // Index field 0 with this table's salt and generation: zero must not alias the first slot.
  assert_null(table.find(id & ~kIndexMask).get());
  assert_non_null(table.find(id).get());
}

void removed_id_stays_invalid_when_slot_is_reused(void **) {
  Table table;
  const uint64_t old_id = table.insert(std::make_shared<int>(1));
  table.remove(old_id);
  auto b = std::make_shared<int>(2);
  const uint64_t new_id = table.insert(b);
  // Same slot, so only the generation can tell the two ids apart.
  assert_int_equal(new_id & kIndexMask, old_id & kIndexMask);
  assert_true(new_id != old_id);
  assert_null(table.find(old_id).get());
  assert_null(table.remove(old_id).get());
  assert_ptr_equal(table.find(new_id).get(), b.get());
}

void copy_taken_before_remove_fails(void **) {
  Table table;
  const uint64_t id = table.insert(std::make_shared<int>(1));
  const uint64_t copy = id;  // what a second naa_handle of the caller would still hold
  table.remove(id);
  // Stays invalid however often its slot is handed out again.
  for (int i = 0; i < 1000; ++i) {
    const uint64_t reused = table.insert(std::make_shared<int>(i));
    assert_int_equal(reused & kIndexMask, copy & kIndexMask);
    assert_null(table.find(copy).get());
    table.remove(reused);
  }
  assert_null(table.find(copy).get());
}

void corrupted_ids_fail(void **) {
  Table table;
  auto a = std::make_shared<int>(1);
  const uint64_t id = table.insert(a);
  table.insert(std::make_shared<int>(2));

  for (unsigned bit = kSaltShift; bit < 64; ++bit)
    assert_null(table.find(id ^ uint64_t{1} << bit).get());
  for (unsigned bit = kGenerationShift; bit < kSaltShift; ++bit)
    assert_null(table.find(id ^ uint64_t{1} << bit).get());

  const uint64_t high = id & ~kIndexMask;
  assert_null(table.find(high | 3).get());  // one past the two slots
  assert_null(table.find(high | kIndexMask).get());

  assert_null(table.find(0xdeadbeefcafef00dULL).get());
  assert_null(table.find(UINT64_MAX).get());
  std::mt19937_64 garbage(20240611);
  for (int i = 0; i < 100000; ++i) assert_null(table.find(garbage()).get());

  // None of the misses disturbed the real entry.
  assert_null(table.remove(id ^ uint64_t{1} << kSaltShift).get());
  assert_ptr_equal(table.find(id).get(), a.get());
}

void found_object_outlives_remove(void **) {
  int destroyed = 0;
  Table table;
  const uint64_t id = table.insert(std::shared_ptr<int>(new int(7), [&destroyed](int *p) {
    ++destroyed;
    delete p;
  }));
  std::shared_ptr<int> held = table.find(id);
  table.remove(id);
  assert_null(table.find(id).get());
  assert_int_equal(destroyed, 0);
  assert_int_equal(*held, 7);
  held.reset();
  assert_int_equal(destroyed, 1);
}

// A call over many handles pins them (naa_waitany & co.): a remove() meanwhile (naa_finalize
// on another thread) makes the id invalid at once but destroys the object only at the last
// unpin_all(), and the slot is handed out again only then.
void pinned_object_outlives_remove(void **) {
  int destroyed = 0;
  Table table;
  const uint64_t ids[2] = {table.insert(std::shared_ptr<int>(new int(7),
                                                             [&destroyed](int *p) {
                                                               ++destroyed;
                                                               delete p;
                                                             })),
                           table.insert(std::make_shared<int>(8))};
  auto id = [&ids](size_t i) { return ids[i]; };
  int *first[2], *second[2];
  assert_true(table.pin_all(2, id, first));
  assert_true(table.pin_all(2, id, second));
  assert_int_equal(*first[0], 7);
  assert_int_equal(*first[1], 8);
  assert_null(table.remove(ids[0]).get());
  assert_null(table.find(ids[0]).get());
  assert_int_equal(destroyed, 0);
  const uint64_t other = table.insert(std::make_shared<int>(9));
  assert_true((other & kIndexMask) != (ids[0] & kIndexMask));  // the slot is still taken
  table.unpin_all(2, id, first);
  assert_int_equal(destroyed, 0);
  assert_int_equal(*second[0], 7);
  table.unpin_all(2, id, second);
  assert_int_equal(destroyed, 1);
  assert_int_equal(table.insert(std::make_shared<int>(10)) & kIndexMask, ids[0] & kIndexMask);
  assert_int_equal(*table.find(ids[1]), 8);
}

// pin_all() tells whether every id but 0 was found: naa_waitany looks for the one to blame only
// then. A 0 (NAA_HANDLE_NULL) is found as null, and so is an id gone.
void pin_all_tells_whether_any_id_is_gone(void **) {
  Table table;
  uint64_t ids[3] = {table.insert(std::make_shared<int>(1)), 0,
                     table.insert(std::make_shared<int>(3))};
  auto id = [&ids](size_t i) { return ids[i]; };
  int *pinned[3];
  assert_true(table.pin_all(3, id, pinned));
  assert_null(pinned[1]);
  table.unpin_all(3, id, pinned);
  assert_non_null(table.remove(ids[2]).get());
  assert_false(table.pin_all(3, id, pinned));
  assert_int_equal(*pinned[0], 1);
  assert_null(pinned[1]);
  assert_null(pinned[2]);
  table.unpin_all(3, id, pinned);
  ids[2] = ids[0] ^ (uint64_t{1} << 60);  // another salt: never this table's
  assert_false(table.pin_all(3, id, pinned));
  table.unpin_all(3, id, pinned);
}

void concurrent_cycles(void **) {
  constexpr int kThreads = 4, kCycles = 10000;
  // Each thread keeps a few entries live so that slots freed by one thread are reused by another
  // while the first still holds ids for its neighbours.
  constexpr size_t kLive = 8;
  Table table;
  std::atomic<int> wrong{0};

  struct Entry {
    uint64_t id;
    std::shared_ptr<int> object;
    int value;
  };
  auto worker = [&](int t) {
    std::vector<Entry> live;
    auto check_and_remove = [&](const Entry &entry) {
      const std::shared_ptr<int> found = table.find(entry.id);
      if (found != entry.object || *found != entry.value) ++wrong;
      if (table.remove(entry.id) != entry.object) ++wrong;
      if (table.find(entry.id) != nullptr) ++wrong;
    };
    for (int i = 0; i < kCycles; ++i) {
      const int value = t * kCycles + i;
      auto object = std::make_shared<int>(value);
      const uint64_t id = table.insert(object);
      if (table.find(id) != object) ++wrong;
      live.push_back({id, std::move(object), value});
      if (live.size() > kLive) {
        check_and_remove(live.front());
        live.erase(live.begin());
      }
    }
    for (const Entry &entry : live) check_and_remove(entry);
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (std::thread &thread : threads) thread.join();
  assert_int_equal(wrong.load(), 0);
}

// A fork()ed child sees the parent's ids as inherited, never as its own: no find, no remove
// (which would destroy the parent's object in the child), while its own inserts work.
void child_of_fork_cannot_use_parent_ids(void **) {
  Table table;
  int destroyed = 0;
  const uint64_t id = table.insert(std::shared_ptr<int>(new int(5), [&destroyed](int *p) {
    ++destroyed;
    delete p;
  }));
  assert_false(table.inherited(id));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int bad = 0;
    bad += table.find(id) != nullptr;
    bad += !table.inherited(id);
    bad += table.remove(id) != nullptr;
    bad += destroyed != 0;
    bad += !table.inherited(id);  // still there, untouched
    const uint64_t own = table.insert(std::make_shared<int>(6));
    bad += table.find(own) == nullptr || *table.find(own) != 6 || table.inherited(own);
    _exit(bad);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(*table.find(id), 5);
  assert_int_equal(destroyed, 0);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(insert_find_remove),
      cmocka_unit_test(zero_is_never_an_id),
      cmocka_unit_test(stale_id_never_revives),
      cmocka_unit_test(removed_id_stays_invalid_when_slot_is_reused),
      cmocka_unit_test(copy_taken_before_remove_fails),
      cmocka_unit_test(corrupted_ids_fail),
      cmocka_unit_test(found_object_outlives_remove),
      cmocka_unit_test(pinned_object_outlives_remove),
      cmocka_unit_test(pin_all_tells_whether_any_id_is_gone),
      cmocka_unit_test(concurrent_cycles),
      cmocka_unit_test(child_of_fork_cannot_use_parent_ids),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
