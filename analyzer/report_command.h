// `rankscope-analyze report`: argv[0] is "report"; returns the process exit code and prints
// its own errors.
#pragma once

int RunReportCommand(int argc, char** argv);
