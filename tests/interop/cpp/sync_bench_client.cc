// omniORB client of `armillary bench sync`: one figure per run, against
// the Interop::Everything object in IOR-FILE, printing "elapsed_ns T" on
// stdout (the time the measured calls took) and "calls N".
//   sync_bench_client throughput IOR-FILE THREADS CALLS [-ORB...]
//     CALLS echo_longlong calls split over THREADS threads that share one
//     object reference (omniORB opens connections for them as it does by
//     default); T from the start of the first to the end of the last.
//   sync_bench_client oneway IOR-FILE N [-ORB...]
//     N oneway ping calls from one thread, then oneway_count until the
//     server has counted all N; T from the first ping to that count.
//   sync_bench_client bytes IOR-FILE SIZE N [-ORB...]
//     N echo_octets calls of SIZE octets, one at a time; T the sum of the
//     calls' times (each reply checked, the check not timed).
// Each mode makes a few calls first (connect and warm up). Exit status 1,
// with the reason on stderr, when a reply is wrong.
#include <omniORB4/CORBA.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "interop.hh"

namespace {

using Clock = std::chrono::steady_clock;

long long nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

int fail(const std::string& why) {
  std::cerr << "sync_bench_client: " << why << std::endl;
  return 1;
}

void report(long long elapsed_ns, long calls) {
  std::printf("elapsed_ns %lld\ncalls %ld\n", elapsed_ns, calls);
}

int throughput(Interop::Everything_ptr e, long threads, long calls) {
  for (long i = 0; i < 100; i++) {
    if (e->echo_longlong(i) != i) return fail("echo_longlong returned a wrong value");
  }
  std::mutex mutex;
  std::condition_variable cond;
  bool go = false;
  std::atomic<long> wrong(0);
  std::vector<std::thread> workers;
  for (long t = 0; t < threads; t++) {
    long mine = calls / threads + (t < calls % threads ? 1 : 0);
    workers.emplace_back([&, t, mine] {
      {
        std::unique_lock<std::mutex> lock(mutex);
        cond.wait(lock, [&] { return go; });
      }
      for (long i = 0; i < mine; i++) {
        CORBA::LongLong v = t * 1000000000LL + i;
        if (e->echo_longlong(v) != v) wrong++;
      }
    });
  }
  auto t0 = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex);
    go = true;
  }
  cond.notify_all();
  for (auto& w : workers) w.join();
  auto t1 = Clock::now();
  if (wrong.load() != 0) return fail("echo_longlong returned a wrong value");
  report(nanos(t1 - t0), calls);
  return 0;
}

// Reads the server's oneway count until it reaches `target` (the server
// may still be running oneways it has read) or the deadline passes.
CORBA::Long count_until(Interop::Everything_ptr e, CORBA::Long target, Clock::time_point deadline) {
  CORBA::Long count = e->oneway_count();
  while (count < target && Clock::now() < deadline) count = e->oneway_count();
  return count;
}

int oneway(Interop::Everything_ptr e, long n) {
  auto deadline = Clock::now() + std::chrono::seconds(60);
  CORBA::Long before = e->oneway_count();
  for (long i = 0; i < 100; i++) e->ping(0);
  CORBA::Long warmed = count_until(e, before + 100, deadline);
  if (warmed != before + 100) return fail("the server lost oneways of the warm-up");
  CORBA::Long target = warmed + (CORBA::Long)n;
  auto t0 = Clock::now();
  for (long i = 0; i < n; i++) e->ping((CORBA::Long)i);
  CORBA::Long count = count_until(e, target, deadline);
  auto t1 = Clock::now();
  if (count != target) {
    return fail("the server counted " + std::to_string(count - warmed) + " of " +
                std::to_string(n) + " oneways");
  }
  report(nanos(t1 - t0), n);
  return 0;
}

int bytes(Interop::Everything_ptr e, long size, long n) {
  Interop::OctetSeq payload;
  payload.length((CORBA::ULong)size);
  CORBA::Octet* data = payload.get_buffer();
  for (long j = 0; j < size; j++) data[j] = (CORBA::Octet)(j * 7 + 3);
  long long total = 0;
  for (long i = -3; i < n; i++) {
    // Each call's payload differs in its first octets: a stale reply is
    // caught.
    if (size >= (long)sizeof(long)) std::memcpy(data, &i, sizeof(long));
    auto t0 = Clock::now();
    Interop::OctetSeq_var reply = e->echo_octets(payload);
    auto t1 = Clock::now();
    if (reply->length() != payload.length() ||
        (size > 0 && std::memcmp(reply->get_buffer(), data, (size_t)size) != 0)) {
      return fail("echo_octets returned other octets");
    }
    if (i >= 0) total += nanos(t1 - t0);  // the first three warm up
  }
  report(total, n);
  return 0;
}

std::string read_ior(const char* file) {
  std::ifstream in(file);
  std::string ior;
  std::getline(in, ior);
  return ior;
}

}  // namespace

int main(int argc, char** argv) {
  CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
  if (argc < 4) {
    std::cerr << "usage: sync_bench_client throughput|oneway|bytes IOR-FILE ARGS..." << std::endl;
    return 2;
  }
  std::string mode = argv[1];
  int status = 2;
  try {
    CORBA::Object_var obj = orb->string_to_object(read_ior(argv[2]).c_str());
    Interop::Everything_var e = Interop::Everything::_narrow(obj);
    if (CORBA::is_nil(e)) return fail("the IOR is not an Interop::Everything");
    if (mode == "throughput" && argc >= 5) {
      status = throughput(e, std::atol(argv[3]), std::atol(argv[4]));
    } else if (mode == "oneway") {
      status = oneway(e, std::atol(argv[3]));
    } else if (mode == "bytes" && argc >= 5) {
      status = bytes(e, std::atol(argv[3]), std::atol(argv[4]));
    } else {
      std::cerr << "sync_bench_client: unknown mode or missing arguments" << std::endl;
    }
  } catch (CORBA::Exception& ex) {
    status = fail(std::string("CORBA exception ") + ex._name());
  }
  orb->destroy();
  return status;
}
