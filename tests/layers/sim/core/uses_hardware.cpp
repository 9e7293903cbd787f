// A core file that includes a header of the layer above it: the layer check must refuse it.
#include "hardware/hardware_spec.hpp"
