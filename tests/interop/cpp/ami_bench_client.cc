// omniORB AMI throughput client for `armillary bench invocation`: makes N
// calls of Interop::Everything::echo_longlong on the object in IOR-FILE
// with sendc_echo_longlong and a reply handler, at most WINDOW of them
// awaiting their reply at any time, and prints the throughput:
//   ami_bench_client IOR-FILE N WINDOW [-ORB...]
// prints "calls_per_s X" and "replies R" on stdout. Exit status 1 when a
// reply is an exception or carries the wrong value.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <omniORB4/CORBA.h>
#include "invocation_bench.hh"

namespace {

// Counts replies; the sender waits on `cond` while WINDOW are in flight.
class Handler : public POA_Interop::AMI_EverythingHandler {
 public:
  explicit Handler(long window) : window_(window) {}

  void echo_longlong(CORBA::LongLong v) override {
    std::lock_guard<std::mutex> lock(mutex_);
    replies_++;
    sum_ += v;
    in_flight_--;
    cond_.notify_one();
  }

  void echo_longlong_excep(Messaging::ExceptionHolder*) override {
    std::lock_guard<std::mutex> lock(mutex_);
    failures_++;
    in_flight_--;
    cond_.notify_one();
  }

  // Blocks until fewer than WINDOW calls are in flight, then counts one more.
  void acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    cond_.wait(lock, [this] { return in_flight_ < window_; });
    in_flight_++;
  }

  // Blocks until every call has been answered.
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    cond_.wait(lock, [this] { return in_flight_ == 0; });
  }

  long replies() const { return replies_; }
  long failures() const { return failures_; }
  long long sum() const { return sum_; }

 private:
  std::mutex mutex_;
  std::condition_variable cond_;
  long window_;
  long in_flight_ = 0;
  long replies_ = 0;
  long failures_ = 0;
  long long sum_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
  if (argc < 4) {
    std::cerr << "usage: ami_bench_client IOR-FILE N WINDOW" << std::endl;
    return 2;
  }
  std::ifstream in(argv[1]);
  std::string ior;
  std::getline(in, ior);
  long n = std::atol(argv[2]);
  long window = std::atol(argv[3]);
  if (n <= 0 || window <= 0) {
    std::cerr << "N and WINDOW must be positive" << std::endl;
    return 2;
  }
  CORBA::Object_var poa_obj = orb->resolve_initial_references("RootPOA");
  PortableServer::POA_var poa = PortableServer::POA::_narrow(poa_obj);
  PortableServer::POAManager_var manager = poa->the_POAManager();
  manager->activate();
  Handler* handler = new Handler(window);
  PortableServer::ObjectId_var id = poa->activate_object(handler);
  Interop::AMI_EverythingHandler_var handler_ref = handler->_this();

  CORBA::Object_var obj = orb->string_to_object(ior.c_str());
  Interop::Everything_var e = Interop::Everything::_unchecked_narrow(obj);
  e->echo_longlong(0);  // connect and warm up

  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; i++) {
    handler->acquire();
    e->sendc_echo_longlong(handler_ref, i);
  }
  handler->drain();
  auto t1 = std::chrono::steady_clock::now();
  double seconds = std::chrono::duration<double>(t1 - t0).count();
  long long expected = (long long)n * (n - 1) / 2;
  std::printf("calls_per_s %.1f\nreplies %ld\n", n / seconds, handler->replies());
  bool ok = handler->failures() == 0 && handler->replies() == n && handler->sum() == expected;
  handler->_remove_ref();
  orb->destroy();
  return ok ? 0 : 1;
}
