// tuning.cpp - the knobs' storage.
#include "core/tuning.h"

namespace uepoll::core {

Knobs& knobs() noexcept {
  static Knobs k;
  return k;
}

}  // namespace uepoll::core
