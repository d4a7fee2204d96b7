// real.h - the libc functions behind the preload's interposers, found with
// dlsym(RTLD_NEXT) once per function (owned by src/preload/).  No locks:
// each pointer is a function-local static (thread-safe initialization).
#pragma once

#include <dlfcn.h>

namespace uepoll::preload {

void* resolve(const char* name) noexcept;  // aborts with a message if absent
void* resolve_optional(const char* name) noexcept;

}  // namespace uepoll::preload

// The real `name`, typed as the libc declaration of `name`.
#define UEP_REAL(name)                                                                               \
  ([]() noexcept {                                                                                   \
    static const auto fn = reinterpret_cast<decltype(&::name)>(::uepoll::preload::resolve(#name)); \
    return fn;                                                                                       \
  }())
