// One rank of a multi-group job shaped like Megatron-LM (--parallel tp=T,pp=P,dp=D[,ep=E]),
// as a GPU job runs it: the host issues, the device (the test bed's stream workers) runs.
// After the world communicator, the rank's process groups are split from it
// (process_groups.h). Per step, after data loading and host preprocessing, the rank's pipeline
// stage runs Megatron's 1F1B schedule (pipeline_schedule.h) over --microbatches micro-batches:
//  - each forward and backward of a micro-batch runs --layers transformer layers, each with
//    two tensor-parallel all-reduces (the row-parallel outputs in forward, the
//    column-parallel inputs' gradients in backward) and, with ep > 1, a mixture-of-experts
//    block in place of the dense MLP: the token dispatch and combine all-to-alls over the
//    expert-parallel group (all_to_all_single with split sizes);
//  - every exchange with the neighbouring stages is one batch_isend_irecv on the
//    pipeline-parallel group, followed by a device synchronize (Megatron's batch_p2p_sync,
//    its default: the host waits there);
// then the distributed optimizer's data-parallel reduce-scatter of the gradients, the
// optimizer kernel and the all-gather of the parameters, and the loss copied to the host (the
// step's sync point). Every buffer moved is filled and checked on the device
// (parallel_kernels.h); a failed check prints a warning at the step's end (a mismatch fault
// makes some: NCCL itself does not notice another op).
// Faults reach only the faulty rank: --hang-at-step, --crash-at-step and --mismatch strike at
// --fault-in (the step's start, or just before the rank's first operation of the step in its
// tp, pp, dp or ep group); --slow-factor lengthens its device kernels.
#pragma once

#include "nccl.h"
#include "rscore/result.h"
#include "trainer_options.h"
#include "workload.h"

namespace trainer {

rs::Result<void> TrainParallel(const TrainerOptions& o, ncclComm_t world, const Compute& compute,
                               DataLoader* loader);

}  // namespace trainer
