// omniORB client of a CosNaming service (Armillary's `armillary naming
// serve` in crates/armillary-cli/tests/naming.rs): drives every
// NamingContext / NamingContextExt operation with omniORB's own CosNaming
// stubs and checks each answer, exceptions and their fields included.
// Usage:
//   naming_client -ORBInitRef NameService=corbaloc:iiop:HOST:PORT/NameService
// It expects the name "from-rust" bound to an object by the test first,
// and leaves "cpp.ctx/kept" bound (to the root context) for the test to
// see. Prints one line per check and, last, "N passed, M failed"; exits 0
// only if nothing failed.
#include <iostream>
#include <set>
#include <string>
#include <omniORB4/CORBA.h>
#include <omniORB4/Naming.hh>

static int passed = 0, failed = 0;

static void check(bool ok, const std::string& what) {
  if (ok) {
    passed++;
    std::cout << "ok   " << what << std::endl;
  } else {
    failed++;
    std::cout << "FAIL " << what << std::endl;
  }
}

#define TRY(what, ...)                                                        \
  try {                                                                        \
    __VA_ARGS__;                                                               \
  } catch (CORBA::SystemException & e) {                                       \
    failed++;                                                                  \
    std::cout << "FAIL " << what << ": system exception " << e._name()         \
              << " minor " << e.minor() << std::endl;                          \
  } catch (CORBA::Exception & e) {                                             \
    failed++;                                                                  \
    std::cout << "FAIL " << what << ": exception " << e._name() << std::endl;  \
  }

int main(int argc, char** argv) {
  CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
  CosNaming::NamingContextExt_var root;
  TRY("resolve_initial_references NameService", {
    CORBA::Object_var obj = orb->resolve_initial_references("NameService");
    root = CosNaming::NamingContextExt::_narrow(obj);
  });
  check(!CORBA::is_nil(root), "the root is a NamingContextExt");
  if (CORBA::is_nil(root)) {
    std::cout << passed << " passed, " << failed << " failed" << std::endl;
    return 1;
  }

  TRY("resolve_str from-rust", {
    CORBA::Object_var obj = root->resolve_str("from-rust");
    check(!CORBA::is_nil(obj), "from-rust resolves to an object");
  });

  CosNaming::NamingContext_var ctx;
  TRY("bind_new_context cpp.ctx", {
    ctx = root->bind_new_context(*root->to_name("cpp.ctx"));
  });
  TRY("bind cpp.ctx/obj", root->bind(*root->to_name("cpp.ctx/obj"), root));
  TRY("AlreadyBound", {
    try {
      root->bind(*root->to_name("cpp.ctx/obj"), root);
      check(false, "bind of a bound name raises AlreadyBound");
    } catch (CosNaming::NamingContext::AlreadyBound&) {
      check(true, "bind of a bound name raises AlreadyBound");
    }
  });
  TRY("resolve through the new context", {
    CORBA::Object_var obj = ctx->resolve(*root->to_name("obj"));
    check(obj->_is_equivalent(root), "cpp.ctx/obj is the root");
  });
  TRY("NotFound missing_node", {
    try {
      root->resolve_str("cpp.ctx/none/x");
      check(false, "a missing node raises NotFound");
    } catch (CosNaming::NamingContext::NotFound& e) {
      check(e.why == CosNaming::NamingContext::missing_node &&
                e.rest_of_name.length() == 2 &&
                std::string(e.rest_of_name[0].id) == "none",
            "a missing node raises NotFound(missing_node, none/x)");
    }
  });
  TRY("NotFound not_context", {
    try {
      root->resolve_str("cpp.ctx/obj/x");
      check(false, "an object in the middle raises NotFound");
    } catch (CosNaming::NamingContext::NotFound& e) {
      check(e.why == CosNaming::NamingContext::not_context,
            "an object in the middle raises NotFound(not_context)");
    }
  });
  TRY("InvalidName", {
    try {
      CosNaming::Name empty;
      root->resolve(empty);
      check(false, "an empty name raises InvalidName");
    } catch (CosNaming::NamingContext::InvalidName&) {
      check(true, "an empty name raises InvalidName");
    }
  });
  TRY("rebind and list through an iterator", {
    for (int i = 0; i < 7; i++) {
      std::string name = "o" + std::to_string(i);
      ctx->rebind(*root->to_name(name.c_str()), root);
    }
    CosNaming::BindingList_var first;
    CosNaming::BindingIterator_var it;
    ctx->list(3, first, it);
    std::set<std::string> seen;
    for (CORBA::ULong i = 0; i < first->length(); i++)
      seen.insert(std::string(first[i].binding_name[0].id));
    check(first->length() == 3 && !CORBA::is_nil(it), "list(3) gives 3 and an iterator");
    CosNaming::BindingList_var rest;
    while (it->next_n(2, rest)) {
      for (CORBA::ULong i = 0; i < rest->length(); i++)
        seen.insert(std::string(rest[i].binding_name[0].id));
    }
    it->destroy();
    check(seen.size() == 8, "the iterator gives every binding (8)");
  });
  TRY("unbind", {
    ctx->unbind(*root->to_name("o0"));
    try {
      ctx->unbind(*root->to_name("o0"));
      check(false, "unbind of an unbound name raises NotFound");
    } catch (CosNaming::NamingContext::NotFound& e) {
      check(e.why == CosNaming::NamingContext::missing_node,
            "unbind of an unbound name raises NotFound(missing_node)");
    }
  });
  TRY("destroy", {
    CosNaming::NamingContext_var empty = root->bind_new_context(*root->to_name("empty"));
    try {
      ctx->destroy();
      check(false, "destroy of a context with bindings raises NotEmpty");
    } catch (CosNaming::NamingContext::NotEmpty&) {
      check(true, "destroy of a context with bindings raises NotEmpty");
    }
    root->unbind(*root->to_name("empty"));
    empty->destroy();
    try {
      CosNaming::BindingList_var list;
      CosNaming::BindingIterator_var iterator;
      empty->list(1, list, iterator);
      check(false, "a destroyed context is gone");
    } catch (CORBA::OBJECT_NOT_EXIST&) {
      check(true, "a destroyed context is OBJECT_NOT_EXIST");
    }
  });
  TRY("to_url", {
    CORBA::String_var url = root->to_url(":myhost:2809", "a b/c");
    check(std::string(url) == "corbaname::myhost:2809#a%20b/c", "to_url escapes");
  });
  TRY("keep cpp.ctx/kept", root->bind(*root->to_name("cpp.ctx/kept"), root));

  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  orb->destroy();
  return failed == 0 ? 0 : 1;
}
