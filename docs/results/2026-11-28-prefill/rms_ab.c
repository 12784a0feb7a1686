/* rms_ab.c — RMSNorm before 2026-11-28 (one row at a time, scalar) against rmsnorm_rows
 * and scale_row (copied from src/core/forward.c), in one process, alternating, ROWS x DIM:
 * the median ratio of pair times, and whether the bits are equal. Not built by the
 * project: gcc -O2 rms_ab.c -lm -o rms_ab && ./rms_ab ROWS DIM */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
static void old_rmsnorm(float *o, const float *x, const float *weight, int size, float eps)
{
    float ss = 0.0f;
    for (int j = 0; j < size; j++)
        ss += x[j] * x[j];
    ss /= size;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    for (int j = 0; j < size; j++)
        o[j] = weight[j] * (ss * x[j]);
}
/* o[j] = weight[j] * (s * x[j]), j < size; o may be x. Each 8 values are read into a
 * buffer before any is written, so the compiler may do them as vectors. */
static void scale_row(float *o, const float *x, const float *weight, float s, int size)
{
    int j = 0;
    for (; j + 8 <= size; j += 8) {
        float t[8];
        for (int u = 0; u < 8; u++)
            t[u] = weight[j + u] * (s * x[j + u]);
        for (int u = 0; u < 8; u++)
            o[j + u] = t[u];
    }
    for (; j < size; j++)
        o[j] = weight[j] * (s * x[j]);
}

void forward_rmsnorm(float *o, const float *x, const float *weight, int size, float eps)
{
    float ss = 0.0f;
    for (int j = 0; j < size; j++)
        ss += x[j] * x[j];
    ss /= size;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    scale_row(o, x, weight, ss, size);
}
/* RMSNorm of `rows` rows of x (size each, contiguous) into o (may be x), as
 * forward_rmsnorm does row by row and with its bits: each row's sum of squares still
 * adds in j order, but NORM_ROWS rows' sums advance side by side, so the adds of one
 * row no longer wait for each other's latency. */
enum { NORM_ROWS = 8 };
static void rmsnorm_rows(float *o, const float *x, const float *weight, int rows, int size,
                         float eps)
{
    for (int r0 = 0; r0 < rows; r0 += NORM_ROWS) {
        int nr = rows - r0 < NORM_ROWS ? rows - r0 : NORM_ROWS;
        const float *xr = x + (size_t)r0 * size;
        float *orow = o + (size_t)r0 * size;
        if (nr < NORM_ROWS) {
            for (int r = 0; r < nr; r++)
                forward_rmsnorm(orow + (size_t)r * size, xr + (size_t)r * size, weight, size,
                                eps);
            continue;
        }
        const float *x0 = xr, *x1 = x0 + size, *x2 = x1 + size, *x3 = x2 + size,
                    *x4 = x3 + size, *x5 = x4 + size, *x6 = x5 + size, *x7 = x6 + size;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, s5 = 0.0f, s6 = 0.0f,
              s7 = 0.0f;
        for (int j = 0; j < size; j++) {
            s0 += x0[j] * x0[j];
            s1 += x1[j] * x1[j];
            s2 += x2[j] * x2[j];
            s3 += x3[j] * x3[j];
            s4 += x4[j] * x4[j];
            s5 += x5[j] * x5[j];
            s6 += x6[j] * x6[j];
            s7 += x7[j] * x7[j];
        }
        const float ss[NORM_ROWS] = {s0, s1, s2, s3, s4, s5, s6, s7};
        for (int r = 0; r < NORM_ROWS; r++) {
            float s = ss[r];
            s /= size;
            s += eps;
            s = 1.0f / sqrtf(s);
            scale_row(orow + (size_t)r * size, xr + (size_t)r * size, weight, s, size);
        }
    }
}

static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  int rows=argc>1?atoi(argv[1]):256, dim=argc>2?atoi(argv[2]):768, pairs=201;
  float *x=malloc(sizeof(float)*rows*dim),*w=malloc(sizeof(float)*dim),*o1=malloc(sizeof(float)*rows*dim),*o2=malloc(sizeof(float)*rows*dim);
  srand(1); for(int i=0;i<rows*dim;i++) x[i]=(rand()/(float)RAND_MAX-0.5f)*4; for(int i=0;i<dim;i++) w[i]=rand()/(float)RAND_MAX;
  double r[1000];
  for(int p=0;p<pairs;p++){
    double t0=now(); for(int i=0;i<rows;i++) old_rmsnorm(o1+(size_t)i*dim,x+(size_t)i*dim,w,dim,1e-5f);
    double t1=now(); rmsnorm_rows(o2,x,w,rows,dim,1e-5f); double t2=now();
    r[p]=(t1-t0)/(t2-t1);
  }
  qsort(r,pairs,sizeof(double),cmpd);
  printf("rows %d dim %d: before / now, median of %d pairs %.2fx (quartiles %.2f-%.2f); bits %s\n",rows,dim,pairs,r[pairs/2],r[pairs/4],r[3*pairs/4],memcmp(o1,o2,sizeof(float)*rows*dim)?"DIFFER":"equal");
  return 0;}
