// cmds.h: one function per command-line verb; argv[0] is the verb itself.
#ifndef ATTN_CMDS_H
#define ATTN_CMDS_H

int cmd_train(int argc, char **argv);

#endif
