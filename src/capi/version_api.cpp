// version_api.cpp - uep_version() (include/uepoll/version.h): the version
// this library was built as.  Takes no lock; a constant string.
#include <uepoll/version.h>

extern "C" const char* uep_version(void) { return UEPOLL_VERSION_STRING; }
