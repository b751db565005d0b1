/* commands.h: the subcommands, one file each, and their table (main.c). */
#ifndef RACKPLAN_COMMANDS_H
#define RACKPLAN_COMMANDS_H

#include "cli.h"

extern const struct command command_model;
extern const struct command command_topo;
extern const struct command command_fit;
extern const struct command command_roofline;
extern const struct command command_plan;
extern const struct command command_compare;
extern const struct command command_merge;
extern const struct command command_calibrate;
extern const struct command command_serve;
extern const struct command command_price;

int cmd_model(int argc, char **argv);
int cmd_topo(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_roofline(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_price(int argc, char **argv);

#endif
