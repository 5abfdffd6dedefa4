/* The subcommands of the halox program. Each lives in app/cmd_<name>.c. */
#ifndef HX_APP_COMMANDS_H
#define HX_APP_COMMANDS_H

#include "cli.h"

extern const hx_cmd hx_cmd_plan;    /* cmd_plan.c  */
extern const hx_cmd hx_cmd_build;   /* cmd_build.c */
extern const hx_cmd hx_cmd_md;      /* cmd_md.c    */
extern const hx_cmd hx_cmd_bench;   /* cmd_bench.c */
extern const hx_cmd hx_cmd_version; /* main.c      */

#endif
