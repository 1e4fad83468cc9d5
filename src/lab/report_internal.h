// Internal pieces of the report (lab/report*.c): the computed data and the writers.
#ifndef GPTMEG_LAB_REPORT_INTERNAL_H
#define GPTMEG_LAB_REPORT_INTERNAL_H

#include "gptmeg/lab.h"

#include <cjson/cJSON.h>
#include <stdio.h>

cJSON *lab_json_num(double v); // a number, or "inf"/"-inf"/"nan" as a string

#endif
