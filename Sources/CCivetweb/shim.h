#include <civetweb.h>
