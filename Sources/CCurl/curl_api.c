#include "curl_api.h"
