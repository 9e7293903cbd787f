// The unit tests' main: the kinds of system are registered for the input readers first, as every dtsim program
// does (systems::install).
#include <gtest/gtest.h>

#include "systems/system_kinds.hpp"

int main(int argc, char** argv)
{
  dtsim::systems::install();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
