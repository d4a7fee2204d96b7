// tuning.cpp - the knobs' storage.
#include "core/tuning.h"

namespace uepoll::core {

constinit Knobs detail::g_knobs;

}  // namespace uepoll::core
