// The per-loop pool of request states: a free list, a trim once a second.
#include <hotpath/server/request_state.hpp>

#include <hotpath/server/json_arena.hpp>

#include <utility>

namespace hotpath {

request_state::request_state(const http::limits& limits, net::loop& loop)
    : in(new char[initial_buffer_bytes]), parser(limits), body(limits) {
    req.head_ = &head;
    req.loop_ = &loop;
    req.aborted_ = &aborted;
}

request_state_pool::request_state_pool(const http::limits& limits, net::loop& loop, loop_stats& stats)
    : limits_(limits), loop_(loop), stats_(stats) {}

void request_state_pool::destroy(request_state* state) noexcept {
    delete state;
    stats_.request_states_freed.add();
}

request_state_pool::~request_state_pool() {
    while (free_ != nullptr) {
        destroy(std::exchange(free_, free_->next_free));
    }
}

request_state* request_state_pool::take() {
    request_state* s = free_;
    if (s != nullptr) {
        free_ = s->next_free;
        --free_count_;
    } else {
        s = new request_state(limits_, loop_);
        stats_.request_states_made.add();
    }
    if (++in_use_ > peak_in_use_) {
        peak_in_use_ = in_use_;
    }
    return s;
}

void request_state_pool::give(request_state* state) noexcept {
    --in_use_;
    const bool grown = state->capacity > request_state::initial_buffer_bytes ||
                       state->out.capacity() > kept_string_bytes || state->writing.capacity() > kept_string_bytes ||
                       state->overflow.capacity() > kept_string_bytes ||
                       state->res.body().capacity() > kept_string_bytes;
    if (grown) {
        destroy(state);
        return;
    }
    // A connection may give its state back in the middle of a request (it closed): leave nothing of it.
    state->overflow.clear();
    state->parser.reset();
    state->body.start(http::body_framing::none, 0);
    state->res.clear();
    if (state->res.arena_ != nullptr) {
        reset_json_arena(*state->res.arena_);
    }
    state->aborted.reset();
    state->stream.reset();
    state->out.clear();
    state->writing.clear();
    state->next_free = free_;
    free_ = state;
    ++free_count_;
}

void request_state_pool::trim() noexcept {
    const std::size_t needed = peak_in_use_ - in_use_;
    const std::size_t keep = needed > min_free ? needed : min_free;
    while (free_count_ > keep) {
        destroy(std::exchange(free_, free_->next_free));
        --free_count_;
    }
    peak_in_use_ = in_use_;
}

} // namespace hotpath
