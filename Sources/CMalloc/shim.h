// glibc's allocator controls (malloc_trim), which the C library's module does not bring to Swift.
#include <malloc.h>
