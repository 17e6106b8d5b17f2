// The kernel's epoll interface (<sys/epoll.h>), which the C library's module does not bring to Swift.
#include <sys/epoll.h>
