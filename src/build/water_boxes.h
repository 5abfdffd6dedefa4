/* Equilibrated water boxes embedded in the library: water_boxes.c is generated in the build
 * tree from data/water_<model>.gro by src/build/gen/embed_water_boxes.c (see CMakeLists.txt).
 * hx_build_water tiles them. */
#ifndef HX_IO_WATER_BOXES_H
#define HX_IO_WATER_BOXES_H

#include <stddef.h>
#include <stdint.h>

typedef struct hx_water_box {
    const char *model; /* "spce", ... */
    int nmol;          /* molecules, atoms O, H1, H2 each */
    int32_t box[3];    /* box edges in 0.00001 nm (the .gro's five decimals) */
    const int32_t *x;  /* 9 * nmol positions in 0.001 nm (the .gro's three decimals) */
} hx_water_box;

/* Terminated by an entry with model NULL. */
extern const hx_water_box hx_water_boxes[];

#endif
