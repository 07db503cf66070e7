// `rankscope-analyze mcp INPUT... [--trace-dir DIR]`: argv[0] is "mcp"; returns the process exit
// code and prints its own errors (standard output carries only the protocol).
#pragma once

int RunMcpCommand(int argc, char** argv);
