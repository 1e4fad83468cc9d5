// Probes AMX TDPBF16PS rounding on the host (needs AMX-BF16 and Linux's tile permission):
// random tiles of 1-16 pairs against candidate models in f32 (-ffp-contract=off). Measured on
// Sapphire Rapids: 'C+(E+O)' and 'ftz-all' match every case: the even- and odd-index products
// in two f32 chains, their sum added to C, subnormal inputs, products and sums flushed.
//   gcc -O1 -ffp-contract=off -mamx-tile -mamx-bf16 tools/ref/amx_tdpbf16ps_probe.c -lm && ./a.out
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <unistd.h>
#include <sys/syscall.h>
typedef struct __attribute__((packed)) { uint8_t palette, start; uint8_t res[14]; uint16_t colsb[16]; uint8_t rows[16]; } cfg_t;
static uint16_t bf(float f){uint32_t u;memcpy(&u,&f,4);return u>>16;}
static float fb(uint16_t h){uint32_t u=(uint32_t)h<<16;float f;memcpy(&f,&u,4);return f;}
static float tdp(float c0, const uint16_t *A, const uint16_t *B, int npairs) {
  cfg_t cfg; memset(&cfg,0,sizeof cfg); cfg.palette=1;
  cfg.rows[0]=1; cfg.colsb[0]=4; cfg.rows[1]=1; cfg.colsb[1]=npairs*4; cfg.rows[2]=npairs; cfg.colsb[2]=4;
  _tile_loadconfig(&cfg);
  float C=c0;
  _tile_loadd(0,&C,4); _tile_loadd(1,A,64); _tile_loadd(2,B,4);
  _tile_dpbf16ps(0,1,2);
  _tile_stored(0,&C,4); _tile_release();
  return C;
}
static float ftz(float x){return fabsf(x)<1.17549435e-38f?copysignf(0.0f,x):x;}
static float model(int which, float c, const uint16_t *A, const uint16_t *B, int np) {
  float E=0,O=0;
  if (which==0){ for(int k=0;k<np;k++){E=E+fb(A[2*k])*fb(B[2*k]); O=O+fb(A[2*k+1])*fb(B[2*k+1]);} return c+(E+O);}
  if (which==1){ for(int k=0;k<np;k++){E=E+fb(A[2*k])*fb(B[2*k]); O=O+fb(A[2*k+1])*fb(B[2*k+1]);} return (c+E)+O;}
  if (which==3){ for(int k=0;k<np;k++){E=ftz(E+ftz(ftz(fb(A[2*k]))*ftz(fb(B[2*k])))); O=ftz(O+ftz(ftz(fb(A[2*k+1]))*ftz(fb(B[2*k+1]))));} return ftz(ftz(c)+ftz(E+O));}
  if (which==2){ double s=0; for(int k=0;k<2*np;k++) s+=(double)fb(A[k])*fb(B[k]); return c+(float)s;}
  return 0;
}
static double rn(void){ double u=(rand()+1.0)/(RAND_MAX+2.0), v=(rand()+1.0)/(RAND_MAX+2.0); return sqrt(-2*log(u))*cos(6.283185307*v);}
int main(int argc,char**argv){
  if(syscall(SYS_arch_prctl,0x1023,18)){perror("prctl");return 1;}
  srand(1); int bad[4]={0}, n=20000;
  for(int t=0;t<n;t++){
    int np = 1+rand()%16; uint16_t A[32]={0},B[32]={0};
    float scale = (t%4==0)? 1 : (t%4==1 ? 1e-20f: (t%4==2 ? 1000 : 1e-18f));
    for(int i=0;i<2*np;i++){A[i]=bf((float)rn()*(i%5==0?scale:1)); B[i]=bf((float)rn()*1e-19f);}
    float c = (t%4==1)? (float)rn()*1e-38f : (t%4==3 ? (float)rn()*1e-37f : 0);
    float h = tdp(c,A,B,np);
    for(int w=0;w<4;w++){ float m=model(w,c,A,B,np); if(memcmp(&m,&h,4)) bad[w]++; }
  }
  printf("mismatch: C+(E+O) %d, (C+E)+O %d, exact %d, ftz-all %d of %d\n",bad[0],bad[1],bad[2],bad[3],n);
}
