#define POLKIT_I_KNOW_API_IS_SUBJECT_TO_CHANGE 1
#include <polkit/polkit.h>
