// The primitives the stages are built from, one at a time, each as an operation per iteration
// (items_per_second, and the time per iteration is the time per operation):
//
//   thread/...        stage 02: create a thread that does nothing and join it
//   generator/...     stage 05: create a Generator and run it to its first co_yield; resume one
//   callbacks/...     stage 04: call_soon plus the turn of the loop that runs the callback
//   coroutines/...    stage 06: await a coroutine that returns at once; suspend on a Future and be resumed
//                     through it; call_soon plus one turn of the loop
//
// Each loop turn (04 and 06) includes its epoll_wait, with a timeout of 0 because a callback is
// ready: a turn is a system call, however little it has to do.
//
//   bench_primitives --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <pthread.h>

#include <thread>

#include "04_callbacks/event_loop.hpp"
#include "05_generators/generator.hpp"
#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/future.hpp"
#include "06_coroutines/task.hpp"

namespace {

namespace co = sixways::coroutines;
using sixways::generators::Generator;

constexpr double seconds_per_benchmark = 0.2;

// ---- Threads (stage 02) ----

void* do_nothing(void*) { return nullptr; }

// What stage 02 does per request: pthread_create with a 64 KiB stack (the size its fetch.cpp asks
// for; its constant is private to that file), then pthread_join. Real time: the new thread's work
// is not the calling thread's CPU time.
void thread_create_join_64k(benchmark::State& state) {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    for (auto _ : state) {
        pthread_t thread;
        if (pthread_create(&thread, &attributes, do_nothing, nullptr) != 0) {
            state.SkipWithError("pthread_create failed");
            break;
        }
        pthread_join(thread, nullptr);
    }
    pthread_attr_destroy(&attributes);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(thread_create_join_64k)->Name("thread/create_join_64KiB_stack")->UseRealTime()->MinTime(seconds_per_benchmark);

// The same with std::thread and the default stack (8 MiB of address space, `ulimit -s`).
void thread_create_join_default(benchmark::State& state) {
    for (auto _ : state) std::thread([] {}).join();
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(thread_create_join_default)->Name("thread/create_join_std_thread")->UseRealTime()->MinTime(seconds_per_benchmark);

// ---- Generators (stage 05) ----

Generator<int> yield_once() { co_yield 1; }

// Create the frame (one allocation), resume to the first co_yield, destroy the frame.
void generator_create_resume(benchmark::State& state) {
    for (auto _ : state) {
        Generator<int> generator = yield_once();
        generator.next();
        benchmark::DoNotOptimize(generator.current());
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(generator_create_resume)->Name("generator/create_resume_destroy")->MinTime(seconds_per_benchmark);

Generator<int, int> add_one() {
    int sent = 0;
    for (;;) sent = co_yield sent + 1;
}

// One send() into a generator that is already running: a resume and a suspension, no allocation.
// This is what stage 05's loop does each time a descriptor a fetch waits on is ready.
void generator_send(benchmark::State& state) {
    Generator<int, int> generator = add_one();
    generator.next();
    int value = 0;
    for (auto _ : state) {
        generator.send(value);
        value = generator.current();
    }
    benchmark::DoNotOptimize(value);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(generator_send)->Name("generator/send")->MinTime(seconds_per_benchmark);

// ---- Callbacks (stage 04) ----

// A callback that schedules itself again until the benchmark has had enough: each iteration is one
// call_soon and the loop turn that runs it. Two pointers: std::function keeps it without allocating.
struct CallbacksTurn {
    sixways::callbacks::EventLoop* loop;
    benchmark::State* state;
    void operator()() const {
        if (state->KeepRunning()) loop->call_soon(*this);
    }
};

void callbacks_call_soon_turn(benchmark::State& state) {
    sixways::callbacks::EventLoop loop;
    loop.call_soon(CallbacksTurn{&loop, &state});
    loop.run();  // returns when a callback no longer schedules another
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(callbacks_call_soon_turn)->Name("callbacks/call_soon_and_turn")->MinTime(seconds_per_benchmark);

// ---- Coroutines (stage 06) ----

co::Coroutine<int> answer() { co_return 42; }

// co_await on a coroutine runs it inside the awaiting task: its frame is made, pushed on the task's
// stack, resumed by the step's loop, and popped when it finishes, without a turn of the loop.
co::Coroutine<void> await_coroutines(benchmark::State& state) {
    for (auto _ : state) {
        const int value = co_await answer();
        benchmark::DoNotOptimize(value);
    }
}

void coroutine_await(benchmark::State& state) {
    co::EventLoop loop;
    loop.run_until_complete(await_coroutines(state));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(coroutine_await)->Name("coroutines/await_a_coroutine")->MinTime(seconds_per_benchmark);

// A task suspends on a Future that a callback completes: make the Future, call_soon the callback,
// co_await. Turn 1 runs the callback, whose set_result schedules the task's next step; turn 2
// runs that step, which resumes the task. The callback captures the future by reference: it lives
// in the task's frame, which outlives the wait.
co::Coroutine<void> round_trips_through_futures(co::EventLoop& loop, benchmark::State& state) {
    for (auto _ : state) {
        co::Future<int> future(loop);
        loop.call_soon([&future] { future.set_result(1); });
        const int value = co_await future;
        benchmark::DoNotOptimize(value);
    }
}

void future_resume(benchmark::State& state) {
    co::EventLoop loop;
    loop.run_until_complete(round_trips_through_futures(loop, state));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(future_resume)->Name("coroutines/future_set_result_resume_2_turns")->MinTime(seconds_per_benchmark);

// Stage 04's benchmark on stage 06's loop: call_soon and one turn.
struct CoroutinesTurn {
    co::EventLoop* loop;
    benchmark::State* state;
    void operator()() const {
        if (state->KeepRunning()) {
            loop->call_soon(*this);
        } else {
            loop->stop();
        }
    }
};

void coroutines_call_soon_turn(benchmark::State& state) {
    co::EventLoop loop;
    loop.call_soon(CoroutinesTurn{&loop, &state});
    loop.run_forever();  // until a callback calls stop()
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(coroutines_call_soon_turn)->Name("coroutines/call_soon_and_turn")->MinTime(seconds_per_benchmark);

}  // namespace
