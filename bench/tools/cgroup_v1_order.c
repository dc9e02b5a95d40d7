/* cgroup v1: where a run's first task migration after a quiet moment pays its RCU grace period
 * (issue 15). Simulates a helper's timeline (2.5 ms until the request, 0.7 ms planning, mkdir of
 * five groups, 0.5 ms, the move of a child) in four orders, round-robin, after a quiet gap:
 *   none: no warm-up; warm thread @spawn: a thread writes its own tid to its pids group's tasks
 *   when the request comes; A: the helper moves itself into the run's groups at once and its
 *   child is born there; C: the helper writes its own tid to its pids group at once.
 * Root, cgroup v1 hierarchies under /sys/fs/cgroup/<ctrl>/airlock (own child groups only).
 *   gcc -O2 -pthread bench/tools/cgroup_v1_order.c -o /tmp/cg && /tmp/cg ROUNDS GAP_MS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>
#include <signal.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
static char ownpids[512], own[5][512];
static const char*ctr[]={"memory","pids","cpu","cpuacct","freezer"};
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static void spin(double ms){double e=now()+ms;while(now()<e);}
static void until(double t){while(now()<t);}
static void wr(const char*p,const char*v){int fd=open(p,O_WRONLY);if(fd<0){perror(p);exit(1);}if(write(fd,v,strlen(v))<0){perror(p);exit(1);}close(fd);}
static void*warm(void*a){char b[32];snprintf(b,32,"%ld",(long)syscall(SYS_gettid));wr(ownpids,b);return 0;}
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
#define M 4
int main(int argc,char**argv){
  FILE*f=fopen("/proc/self/cgroup","r");char line[512];
  while(fgets(line,512,f)){ char*p=strchr(strchr(line,':')+1,':')+1;p[strcspn(p,"\n")]=0;
    if(strstr(line,":pids:"))snprintf(ownpids,512,"/sys/fs/cgroup/pids%s/tasks",p);
    for(int k=0;k<5;k++){char pat[64];snprintf(pat,64,":%s:",ctr[k]);if(strstr(line,pat)||((k==2||k==3)&&strstr(line,"cpu,cpuacct")))snprintf(own[k],512,"/sys/fs/cgroup/%s%s/cgroup.procs",ctr[k],p);} }
  int N=atoi(argv[1]); double gap=atof(argv[2]);
  static double res[M][1000];
  char me[32]; snprintf(me,32,"%d",getpid());
  for(int i=0;i<N;i++) for(int m0=0;m0<M;m0++){ int m=(m0+i)%M;
    usleep(gap*1000);
    char p[256], d[5][256];
    for(int k=0;k<5;k++)snprintf(d[k],256,"/sys/fs/cgroup/%s/airlock/sim-%d-%d-%d",ctr[k],getpid(),i,m);
    pid_t c=-1; pthread_t th;
    if(m!=2){c=fork(); if(!c){pause();_exit(0);} usleep(500);}
    double t0=now();
    if(m==3){char b[32];snprintf(b,32,"%ld",(long)syscall(SYS_gettid));wr(ownpids,b);} /* C */
    if(m==2){for(int k=0;k<5;k++)mkdir(d[k],0755); for(int k=0;k<5;k++){snprintf(p,256,"%s/cgroup.procs",d[k]);wr(p,me);} } /* A */
    until(t0+2.5);
    if(m==1) pthread_create(&th,0,warm,0); /* current: warm thread at spawn */
    spin(0.7);
    if(m!=2) for(int k=0;k<5;k++)mkdir(d[k],0755);
    spin(0.5);
    if(m==2){ c=fork(); if(!c){pause();_exit(0);} for(int k=0;k<5;k++) wr(own[k],me); }
    else { char v[32]; snprintf(v,32,"%d",c); for(int k=0;k<5;k++){snprintf(p,256,"%s/cgroup.procs",d[k]);wr(p,v);} }
    res[m][i]=now()-t0;
    if(m==1) pthread_join(th,0);
    kill(c,9);waitpid(c,0,0);
    for(int k=0;k<5;k++)rmdir(d[k]);
  }
  const char*nm[]={"none","warm thread @spawn","A helper in early","C fg warm @t0"};
  printf("gap %.0f ms:\n",gap);
  for(int m=0;m<M;m++){qsort(res[m],N,sizeof(double),cmp);printf("  %-20s median %6.2f  p25 %6.2f p75 %6.2f p90 %6.2f\n",nm[m],res[m][N/2],res[m][N/4],res[m][3*N/4],res[m][9*N/10]);}
}
