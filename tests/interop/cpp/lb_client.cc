// omniORB client of the load-balancing tests (crates/armillary-cli/tests/lb.rs):
// for each line read from standard input (a number of microseconds), calls
// LbBench::Worker::work on the object whose IOR is in IOR-FILE (a group
// reference of `armillary lb serve`) and prints the name of the replica
// that answered, or "error NAME COMPLETION" for a system exception. Ends
// at the end of its input. One object reference for the whole run, so
// omniORB's handling of LOCATION_FORWARD shows: it keeps the replica it
// was forwarded to, and goes back to the group reference when that
// replica fails.
//   lb_client IOR-FILE [-ORB...]
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <omniORB4/CORBA.h>
#include "lb_worker.hh"

static const char* completion(CORBA::CompletionStatus c) {
  switch (c) {
    case CORBA::COMPLETED_YES: return "COMPLETED_YES";
    case CORBA::COMPLETED_NO: return "COMPLETED_NO";
    default: return "COMPLETED_MAYBE";
  }
}

int main(int argc, char** argv) {
  CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
  if (argc < 2) {
    std::cerr << "usage: lb_client IOR-FILE [-ORB...]" << std::endl;
    return 2;
  }
  std::ifstream in(argv[1]);
  std::string ior;
  std::getline(in, ior);
  CORBA::Object_var obj = orb->string_to_object(ior.c_str());
  LbBench::Worker_var worker = LbBench::Worker::_narrow(obj);
  std::string line;
  while (std::getline(std::cin, line)) {
    try {
      CORBA::String_var name = worker->work(std::atol(line.c_str()));
      std::cout << name.in() << std::endl;
    } catch (CORBA::SystemException& e) {
      std::cout << "error " << e._name() << " " << completion(e.completed()) << std::endl;
    }
  }
  orb->destroy();
  return 0;
}
