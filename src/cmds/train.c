#include "cmds/cmds.h"

int cmd_train(int argc, char **argv) { return 0; }
