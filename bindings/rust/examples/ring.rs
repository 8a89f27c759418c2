//! Ring + sum reduce on every PE of the job, with a clean fallback when symm
//! is not available.
//!
//! ```sh
//! symmrun -n 4 target/debug/examples/ring          # 4 PEs
//! SYMM_RUNTIME=/nonexistent target/debug/examples/ring   # no runtime: exit 0
//! ```
use std::process::ExitCode;

use symm::{Context, Error, ReduceOp};

fn run(ctx: &Context) -> symm::Result<i64> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;

    // Every PE sends its number to its right neighbour.
    let ring = ctx.alloc::<i64>(1)?; // collective: same type and count everywhere
    ring.put(0, &[me as i64], right)?;
    ctx.barrier_all()?; // the puts are complete and visible everywhere
    let from_left = ring.g(0, me)?;
    if from_left != left as i64 {
        return Err(Error::Internal(format!(
            "PE {me} got {from_left} from the ring, expected {left}"
        )));
    }

    // Sum of every PE's number, on every PE.
    let total = ctx.alloc::<i64>(1)?;
    ctx.world().reduce(&total, 0, &ring, 0, 1, ReduceOp::Sum)?;
    let sum = total.g(0, me)?;

    total.free()?; // collective
    ring.free()?;
    Ok(sum)
}

fn main() -> ExitCode {
    let ctx = match Context::init() {
        Ok(ctx) => ctx,
        Err(Error::LibraryNotFound(msg)) => {
            // The program still starts without symm: say so and compute
            // what a single PE would have.
            println!("symm is not available here (SYMM_ERR_LIBRARY_NOT_FOUND): {msg}");
            println!("ring: running without symm; single-process sum = 0 (ok)");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("ring: symm init failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let result = run(&ctx);
    let fin = ctx.finalize(); // collective
    match (result, fin) {
        (Ok(sum), Ok(())) => {
            let expect = (n as i64) * (n as i64 - 1) / 2;
            if sum != expect {
                eprintln!("ring: PE {me}: sum {sum}, expected {expect}");
                return ExitCode::FAILURE;
            }
            println!("ring: PE {me} of {n}: ring ok, sum {sum} (ok)");
            ExitCode::SUCCESS
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("ring: PE {me}: {e}");
            ExitCode::FAILURE
        }
    }
}
