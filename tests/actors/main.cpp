// The actor tests' main: CAF's own test runner (`hb_actor_tests -s <suite>
// -t <test>` runs one; CTest has an entry per test, see
// scripts/cmake/caf_tests.cmake).
#include <caf/test/unit_test_impl.hpp>
