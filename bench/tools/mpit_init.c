/* The cost of Open MPI's MPI_T_init_thread on one rank (issue 27, bench/osu-vm.md): wall and CPU of
 * the call after MPI_Init. Build: mpicc -O2 mpit_init.c -o mpit_init; run: mpirun -n 2 ./mpit_init */
#include <mpi.h>
#include <stdio.h>
#include <sys/resource.h>
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_utime.tv_usec*1e-6+r.ru_stime.tv_sec+r.ru_stime.tv_usec*1e-6;}
int main(int c,char**v){int p,rk;MPI_Init(&c,&v);MPI_Comm_rank(MPI_COMM_WORLD,&rk);double w=MPI_Wtime(),u=cpu();MPI_T_init_thread(MPI_THREAD_SINGLE,&p);
printf("rank %d MPI_T_init_thread wall %.3f s cpu %.3f s\n",rk,MPI_Wtime()-w,cpu()-u);MPI_T_finalize();MPI_Finalize();}
