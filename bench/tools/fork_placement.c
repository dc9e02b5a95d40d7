/* Where a forked child starts beside a busy parent (issue 15): the child records when it first runs;
 * the parent spins 3 ms, as airlock run judges a command while its forked helper prepares. With an
 * argument, the parent moves the child to the other CPU right after the fork (sys::run_beside_me).
 *   gcc -O2 bench/tools/fork_placement.c -o /tmp/fp && /tmp/fp && /tmp/fp pin   (2 CPUs) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
#include <sched.h>
#include <sys/wait.h>
#include <sys/mman.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
int main(int argc,char**argv){
  double *sh=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  for(int i=0;i<12;i++){ usleep(300000);
    double t0=now(); int pc=sched_getcpu();
    pid_t c=fork(); if(!c){ sh[0]=now(); sh[1]=sched_getcpu(); _exit(0);}
    if(argc>1){ cpu_set_t s; CPU_ZERO(&s); CPU_SET(1-pc,&s); sched_setaffinity(c,sizeof s,&s);} 
    double spin_end=now()+3; while(now()<spin_end); /* parent busy like the caller */
    waitpid(c,0,0);
    printf("child started %.3f ms after fork (parent cpu %d, child cpu %.0f)\n", sh[0]-t0, pc, sh[1]);
  }
}
