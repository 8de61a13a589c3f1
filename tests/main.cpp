// doctest main that owns Kokkos' lifetime: tests run between initialize and
// finalize on every configured execution space.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>

#include <iostream>

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int result = 0;
  {
    std::cout << "kdforge tests on " << Kokkos::DefaultExecutionSpace::name()
              << " (host: " << Kokkos::DefaultHostExecutionSpace::name() << ")\n";
    doctest::Context context(argc, argv);
    result = context.run();
  }
  Kokkos::finalize();
  return result;
}
