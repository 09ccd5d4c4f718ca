#include "porta.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

int porta_version(void) { return PORTA_VERSION_NUMBER; }

const char *porta_version_string(void) {
    return STRINGIFY(PORTA_VERSION_MAJOR) "." STRINGIFY(PORTA_VERSION_MINOR) "." STRINGIFY(
        PORTA_VERSION_PATCH);
}
