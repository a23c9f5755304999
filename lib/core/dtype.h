/* Datatypes and reduction operators on host memory. The element arithmetic
 * itself lives in reduce_ops.h, which CUDA code includes too. */
#ifndef XC_DTYPE_H
#define XC_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include "xcoll.h"

/* 1 if dtype / op is a valid enumerator. */
int xc_dtype_valid(xcoll_dtype_t dtype);
int xc_op_valid(xcoll_op_t op);

/* 1 if op may be applied to dtype (bitwise ops need an integer type). */
int xc_op_allowed(xcoll_dtype_t dtype, xcoll_op_t op);

/* dst[i] = a[i] op b[i] for i < count. dst may alias a or b exactly (not
 * partially). AVG reduces as SUM; xc_divide() finishes it. */
void xc_reduce(void *dst, const void *a, const void *b, size_t count, xcoll_dtype_t dtype,
               xcoll_op_t op);

/* buf[i] /= n for i < count (integer division truncates). */
void xc_divide(void *buf, size_t count, xcoll_dtype_t dtype, uint32_t n);

/* IEEE binary16 and bfloat16 conversions, round to nearest-even. */
float xc_half_to_float(uint16_t h);
uint16_t xc_float_to_half(float f);
float xc_bf16_to_float(uint16_t b);
uint16_t xc_float_to_bf16(float f);

#endif
