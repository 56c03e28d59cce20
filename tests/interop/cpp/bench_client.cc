// omniORB latency client for `armillary bench latency`: calls
// Interop::Everything::echo_longlong N times on the object in IOR-FILE and
// prints each round trip in nanoseconds, one per line.
//   bench_client IOR-FILE N [-ORB...]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>
#include <omniORB4/CORBA.h>
#include "interop.hh"

int main(int argc, char** argv) {
  CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
  if (argc < 3) {
    std::cerr << "usage: bench_client IOR-FILE N" << std::endl;
    return 2;
  }
  std::ifstream in(argv[1]);
  std::string ior;
  std::getline(in, ior);
  long n = std::atol(argv[2]);
  CORBA::Object_var obj = orb->string_to_object(ior.c_str());
  Interop::Everything_var e = Interop::Everything::_narrow(obj);
  e->echo_longlong(0);  // connect and warm up
  std::vector<long long> samples;
  samples.reserve(n);
  for (long i = 0; i < n; i++) {
    auto t0 = std::chrono::steady_clock::now();
    CORBA::LongLong r = e->echo_longlong(i);
    auto t1 = std::chrono::steady_clock::now();
    if (r != i) return 1;
    samples.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  }
  for (long long s : samples) std::printf("%lld\n", s);
  orb->destroy();
  return 0;
}
