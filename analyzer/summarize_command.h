// `rankscope-analyze summarize`: argv[0] is "summarize"; returns the process exit code and
// prints its own errors.
#pragma once

int RunSummarizeCommand(int argc, char** argv);
