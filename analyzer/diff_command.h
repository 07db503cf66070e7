// `rankscope-analyze diff`: argv[0] is "diff"; returns the process exit code and prints its own
// errors.
#pragma once

int RunDiffCommand(int argc, char** argv);
