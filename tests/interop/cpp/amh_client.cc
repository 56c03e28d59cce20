// omniORB client of an Armillary AMH servant of Interop::Everything
// (crates/armillary-codegen-tests, AmhEverything): the calls whose answers
// go back through responders after the upcall returned, and the ones an
// AMH servant adds — a user exception raised through a responder, a
// system exception, and a responder dropped unanswered (NO_RESPONSE,
// minor Armillary NO_REPLY, COMPLETED_MAYBE). Usage:
//   amh_client FILE DROPPED-LONG NO-REPLY-MINOR [-ORBmaxGIOPVersion 1.x]
// Prints one line per check and, last, "N passed, M failed"; exits 0 only
// if nothing failed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <omniORB4/CORBA.h>
#include "interop.hh"

static int passed = 0, failed = 0;

static void check(bool ok, const char* what) {
  if (ok) {
    passed++;
    std::cout << "ok   " << what << std::endl;
  } else {
    failed++;
    std::cout << "FAIL " << what << std::endl;
  }
}

#define TRY(what, ...)                                                   \
  try {                                                                   \
    __VA_ARGS__;                                                          \
  } catch (CORBA::SystemException & e) {                                  \
    failed++;                                                             \
    std::cout << "FAIL " << what << ": system exception " << e._name()    \
              << " minor " << e.minor() << std::endl;                     \
  } catch (CORBA::Exception & e) {                                        \
    failed++;                                                             \
    std::cout << "FAIL " << what << ": exception " << e._name() << std::endl; \
  }

int main(int argc, char** argv) {
  CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
  if (argc < 4) {
    std::cerr << "usage: amh_client IOR-FILE DROPPED-LONG NO-REPLY-MINOR [-ORB...]" << std::endl;
    return 2;
  }
  CORBA::Long dropped = std::atol(argv[2]);
  CORBA::ULong no_reply = std::strtoul(argv[3], 0, 10);
  std::ifstream in(argv[1]);
  std::string ior;
  std::getline(in, ior);
  CORBA::Object_var obj = orb->string_to_object(ior.c_str());
  Interop::Everything_var e = Interop::Everything::_narrow(obj);
  check(!CORBA::is_nil(e), "_narrow to Interop::Everything");
  if (CORBA::is_nil(e)) {
    std::cout << passed << " passed, " << failed << " failed" << std::endl;
    return 1;
  }
  TRY("_is_a base", check(e->_is_a("IDL:Interop/Base:1.0"), "_is_a Interop::Base"));
  TRY("echo_long", check(e->echo_long(7) == 7, "echo_long answered by a responder"));
  TRY("base_op", { CORBA::String_var s = e->base_op(); check(std::strcmp(s, "base") == 0, "base_op (inherited, flattened)"); });
  TRY("split", {
    CORBA::Long b = 5, c = 0;
    CORBA::Long r = e->split(10, b, c);
    check(r == 15 && b == 10 && c == 5, "split (inout and out through the responder)");
  });
  TRY("counter", {
    e->counter(12);
    check(e->counter() == 12, "attribute counter through responders");
  });
  try {
    e->fail(7);
    check(false, "fail raises Failure through the responder");
  } catch (Interop::Failure& f) {
    check(f.code == 7 && f.details.length() == 2, "fail raises Failure through the responder");
  } catch (CORBA::Exception& x) {
    check(false, "fail raises Failure through the responder (got another exception)");
  }
  try {
    e->fail_system(5);
    check(false, "fail_system raises NO_PERMISSION through the responder");
  } catch (CORBA::NO_PERMISSION& x) {
    check(x.minor() == 5 && x.completed() == CORBA::COMPLETED_YES,
          "fail_system raises NO_PERMISSION minor 5 COMPLETED_YES through the responder");
  } catch (CORBA::Exception& x) {
    check(false, "fail_system raises NO_PERMISSION (got another exception)");
  }
  try {
    e->echo_long(dropped);
    check(false, "a dropped responder answers NO_RESPONSE");
  } catch (CORBA::NO_RESPONSE& x) {
    check(x.minor() == no_reply && x.completed() == CORBA::COMPLETED_MAYBE,
          "a dropped responder answers NO_RESPONSE, NO_REPLY, COMPLETED_MAYBE");
  } catch (CORBA::SystemException& x) {
    std::cout << "  got " << x._name() << " minor " << x.minor() << std::endl;
    check(false, "a dropped responder answers NO_RESPONSE (got another exception)");
  }
  TRY("after the drop", check(e->echo_long(8) == 8, "the connection serves on after a dropped responder"));
  orb->destroy();
  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  return failed == 0 ? 0 : 1;
}
