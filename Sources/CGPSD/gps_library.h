/* The file name of the libgps that <gps.h> belongs to, which gpsd_shim.c loads with dlopen at the first connection.
 * <gps.h> gives struct gps_data_t's layout and each function's type, so the library loaded must be the one built
 * with that header: a test holds this name to the SONAME of the libgps.so found at build time. Another gpsd API
 * needs its own line here. */
#ifndef WB_GPS_LIBRARY_H
#define WB_GPS_LIBRARY_H

#include <gps.h>

#if GPSD_API_MAJOR_VERSION == 11
#define WB_GPS_LIBRARY "libgps.so.28" /* gpsd 3.22, Debian 12's libgps28 */
#else
#error "which libgps.so.N implements this gps.h? Add its name to gps_library.h"
#endif

#endif
