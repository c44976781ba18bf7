/*
 * npz.h: NumPy's array files inside the library: .npy read from and written to an open stream
 * (npy.c), and .npz archives (npz.c), the side file in which `portc convert` keeps a model's
 * weights so that numpy.load() reads them as they are.
 */
#ifndef PORTC_IR_NPZ_H
#define PORTC_IR_NPZ_H

#include <stdio.h>

#include "graph.h"

/* One .npy array from fp's position; path names the source in messages. */
portc_status npy_read(FILE *fp, const char *path, portc_tensor **out);
bool npy_write(FILE *fp, const portc_tensor *t);

/* Member key (the array name, without ".npy") of an uncompressed .npz archive: from a file, or
 * from an open stream (path names it in messages). */
portc_status npz_load(const char *path, const char *key, portc_tensor **out);
portc_status npz_read(FILE *fp, const char *path, const char *key, portc_tensor **out);

/* Writing an archive: open, add arrays by name, close (which writes the directory). */
typedef struct npz_writer npz_writer;
portc_status npz_create(const char *path, npz_writer **out);
portc_status npz_add(npz_writer *w, const char *key, const portc_tensor *t);
portc_status npz_close(npz_writer *w); /* also frees w; the file is complete only when it returns OK */

#endif
