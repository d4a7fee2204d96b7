// internal_call.cpp - the thread-local depth of uepoll's own libc calls
// (see internal_call.h).  Locks: none.
#include "core/internal_call.h"

extern "C" {
UEP_EXPORT __thread int uep__internal_depth = 0;
}
