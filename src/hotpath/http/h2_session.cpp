// nghttp2 behind h2_session: callbacks that only tell the owner, bodies served from the session's own copies, and an
// allocator that counts what nghttp2 holds.
#include <hotpath/http/h2_session.hpp>

#include <nghttp2/nghttp2.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace hotpath::http {

namespace {

class h2_error_category final : public std::error_category {
public:
    const char* name() const noexcept override { return "h2"; }
    std::string message(int c) const override { return std::string("HTTP/2: ") + nghttp2_strerror(c); }
};

std::error_code h2_code(long long e) noexcept {
    return {static_cast<int>(e), h2_category()};
}

// Runs of whole pages for nghttp2's large blocks, shared by every session of the process: carved from slabs of 64
// pages mapped for the purpose, so that the blocks leave no slack in malloc's heap (an aligned malloc leaves up to a
// page on each side, which other blocks then share). A run let go of waits for the next block of its size; past 16
// waiting of one size, its pages go back to the kernel first. Runs past 8 pages come from malloc. Sessions are
// made and ended a few times per connection, not per request: one lock is cheap enough.
class page_runs {
public:
    static constexpr std::size_t page = 4096;

    static void* take(std::size_t pages) noexcept {
        if (pages > pooled_pages) {
            return std::aligned_alloc(page, pages * page);
        }
        page_runs& r = shared();
        std::lock_guard lock(r.mutex_);
        std::vector<void*>& waiting = r.waiting_[pages];
        if (!waiting.empty()) {
            void* p = waiting.back();
            waiting.pop_back();
            return p;
        }
        if (r.left_ < pages) {
            void* slab = ::mmap(nullptr, slab_pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (slab == MAP_FAILED) {
                return nullptr;
            }
            // The old slab's rest waits as runs of one page.
            for (; r.left_ != 0; --r.left_, r.next_ += page) {
                r.keep(r.next_, 1);
            }
            r.next_ = static_cast<unsigned char*>(slab);
            r.left_ = slab_pages;
        }
        void* p = r.next_;
        r.next_ += pages * page;
        r.left_ -= pages;
        return p;
    }

    static void give(void* p, std::size_t pages) noexcept {
        if (pages > pooled_pages) {
            std::free(p);
            return;
        }
        page_runs& r = shared();
        std::lock_guard lock(r.mutex_);
        r.keep(p, pages);
    }

private:
    static constexpr std::size_t pooled_pages = 8;
    static constexpr std::size_t slab_pages = 64;
    static constexpr std::size_t kept_warm = 16;

    static page_runs& shared() noexcept {
        static page_runs r; // never destroyed: sessions may end during the process's exit
        return r;
    }
    void keep(void* p, std::size_t pages) noexcept {
        std::vector<void*>& waiting = waiting_[pages];
        if (waiting.size() >= kept_warm) {
            ::madvise(p, pages * page, MADV_DONTNEED);
        }
        try {
            waiting.push_back(p);
        } catch (...) {
            ::madvise(p, pages * page, MADV_DONTNEED); // lost to reuse, not to the kernel: its pages are given back
        }
    }

    std::mutex mutex_;
    std::array<std::vector<void*>, pooled_pages + 1> waiting_;
    unsigned char* next_ = nullptr; // the current slab's unused pages
    std::size_t left_ = 0;
};

// Every block nghttp2 takes is counted, so that the session's holding is known at any time. Small blocks (a stream, a
// queued frame, a header list: each stream allocates several) carry their size in front (16 bytes, keeping malloc's
// alignment) and are kept on free lists by size class when nghttp2 lets go of them and handed out again, so that a
// busy session's steady state calls malloc rarely; trim() (an idle connection's tick) and the session's end free
// them. Blocks of a page or more (the outbound frame buffer of 16 KiB, the stream map's 4 KiB table) are runs of
// whole pages (page_runs), listed here, so that an idle session can give their pages back to the kernel
// (give_back_pages).
class counting_allocator {
public:
    std::size_t held = 0;  // bytes nghttp2 holds (the kept free blocks not among them)
    bool creating = false; // set while nghttp2 makes the session: the frame buffer is allocated then

    counting_allocator() = default;
    counting_allocator(const counting_allocator&) = delete;
    counting_allocator& operator=(const counting_allocator&) = delete;
    ~counting_allocator() {
        trim();
        for (const page_block& b : pages_) { // nghttp2 frees its blocks first; none is left unless it failed
            page_runs::give(b.at, b.rounded / page);
        }
    }

    void trim() noexcept {
        for (std::size_t c = 0; c < classes; ++c) {
            while (kept_[c] != nullptr) {
                std::free(std::exchange(kept_[c], kept_[c]->next));
            }
            kept_count_[c] = 0;
        }
    }

    // For an idle session only (nothing waiting to be sent, no frame half-read): the outbound frame buffer's
    // pages, whose bytes are dead between frames (nghttp2 writes a frame whole before it hands it out), and any
    // other page-sized block's pages that read all zeros (the stream map's table once no stream is in it), are
    // given back with MADV_DONTNEED: they read as zeros again and cost a page fault when next touched. Returns the
    // bytes given back.
    std::size_t give_back_pages() noexcept {
        std::size_t given = 0;
        for (const page_block& b : pages_) {
            auto* first = static_cast<unsigned char*>(b.at);
            std::size_t run = 0; // pages from `first` to give back in one call
            for (std::size_t at = 0; at <= b.rounded; at += page) {
                if (at < b.rounded && (b.frame_buffer || all_zero(first + run * page))) {
                    ++run;
                    continue;
                }
                if (run != 0 && ::madvise(first, run * page, MADV_DONTNEED) == 0) {
                    given += run * page;
                }
                first += (run + 1) * page;
                run = 0;
            }
        }
        return given;
    }

    static void* allocate(std::size_t size, void* self) { return static_cast<counting_allocator*>(self)->take(size); }
    static void release(void* p, void* self) { static_cast<counting_allocator*>(self)->give(p); }
    static void* allocate_zeroed(std::size_t count, std::size_t size, void* self) {
        if (size != 0 && count > SIZE_MAX / size) {
            return nullptr;
        }
        void* p = allocate(count * size, self);
        if (p != nullptr) {
            std::memset(p, 0, count * size);
        }
        return p;
    }
    static void* reallocate(void* p, std::size_t size, void* self) {
        auto* a = static_cast<counting_allocator*>(self);
        if (p == nullptr) {
            return a->take(size);
        }
        const page_block* big = a->paged(p);
        const std::size_t old = big != nullptr ? big->size : size_of(p);
        if (big == nullptr && old > largest_kept && size > largest_kept && size < page) {
            auto* grown =
                static_cast<unsigned char*>(std::realloc(static_cast<unsigned char*>(p) - header, size + header));
            if (grown == nullptr) {
                return nullptr;
            }
            std::memcpy(grown, &size, sizeof size);
            a->held = a->held - old + size;
            return grown + header;
        }
        void* moved = a->take(size);
        if (moved == nullptr) {
            return nullptr;
        }
        std::memcpy(moved, p, std::min(old, size));
        a->give(p);
        return moved;
    }

private:
    static constexpr std::size_t header = 16;
    static constexpr std::size_t class_bytes = 32;
    static constexpr std::size_t classes = 16; // blocks of up to 512 bytes are kept
    static constexpr std::size_t largest_kept = class_bytes * classes;
    static constexpr std::uint16_t kept_per_class = 128;
    static constexpr std::size_t page = page_runs::page;
    // nghttp2's outbound frame buffer: a frame header, a pad length byte, and the largest payload (its
    // NGHTTP2_FRAMEBUF_CHUNKLEN). Only a block of this size allocated while the session is made is taken for it.
    static constexpr std::size_t frame_buffer_bytes = 9 + 1 + 16384;

    struct free_block {
        free_block* next;
    };
    struct page_block {
        void* at;
        std::size_t size;
        std::size_t rounded;
        bool frame_buffer;
    };

    static std::size_t class_of(std::size_t size) noexcept { return size == 0 ? 0 : (size - 1) / class_bytes; }
    static std::size_t size_of(void* p) noexcept {
        std::size_t size = 0;
        std::memcpy(&size, static_cast<unsigned char*>(p) - header, sizeof size);
        return size;
    }
    static bool all_zero(const unsigned char* p) noexcept {
        std::uint64_t any = 0;
        for (std::size_t i = 0; i < page; i += sizeof any) {
            std::uint64_t w = 0;
            std::memcpy(&w, p + i, sizeof w);
            any |= w;
        }
        return any == 0;
    }
    // The page-sized block at p, or null: a small block's address is page-aligned only by chance.
    const page_block* paged(void* p) const noexcept {
        if (reinterpret_cast<std::uintptr_t>(p) % page != 0) {
            return nullptr;
        }
        for (const page_block& b : pages_) {
            if (b.at == p) {
                return &b;
            }
        }
        return nullptr;
    }

    void* take(std::size_t size) {
        if (size >= page) {
            return take_pages(size);
        }
        unsigned char* block = nullptr;
        if (size <= largest_kept) {
            const std::size_t c = class_of(size);
            if (kept_[c] != nullptr) {
                block = reinterpret_cast<unsigned char*>(std::exchange(kept_[c], kept_[c]->next));
                --kept_count_[c];
            } else {
                block = static_cast<unsigned char*>(std::malloc(header + (c + 1) * class_bytes));
            }
        } else {
            block = static_cast<unsigned char*>(std::malloc(header + size));
        }
        if (block == nullptr) {
            return nullptr;
        }
        std::memcpy(block, &size, sizeof size);
        held += size;
        return block + header;
    }

    void give(void* p) noexcept {
        if (reinterpret_cast<std::uintptr_t>(p) % page == 0) {
            give_aligned(p); // null too; a call at the end, so that give() stays a leaf for the small blocks
            return;
        }
        give_small(p);
    }

    void give_small(void* p) noexcept {
        const std::size_t size = size_of(p);
        held -= size;
        unsigned char* block = static_cast<unsigned char*>(p) - header;
        if (size <= largest_kept && kept_count_[class_of(size)] < kept_per_class) {
            const std::size_t c = class_of(size);
            auto* f = reinterpret_cast<free_block*>(block);
            f->next = kept_[c];
            kept_[c] = f;
            ++kept_count_[c];
            return;
        }
        std::free(block);
    }

    // A large block's pages, and their end: apart from take() and give(), whose small blocks are what every stream
    // asks for, so that those stay short.
    [[gnu::noinline]] void* take_pages(std::size_t size) {
        const std::size_t rounded = (size + page - 1) / page * page;
        void* p = page_runs::take(rounded / page);
        if (p == nullptr) {
            return nullptr;
        }
        try {
            pages_.push_back({p, size, rounded, creating && size == frame_buffer_bytes});
        } catch (...) {
            page_runs::give(p, rounded / page);
            return nullptr;
        }
        held += size;
        return p;
    }
    [[gnu::noinline]] void give_aligned(void* p) noexcept {
        if (p == nullptr) {
            return;
        }
        const page_block* b = paged(p);
        if (b == nullptr) {
            give_small(p); // a small block, page-aligned by chance
            return;
        }
        held -= b->size;
        const std::size_t pages = b->rounded / page;
        pages_.erase(pages_.begin() + (b - pages_.data()));
        page_runs::give(p, pages);
    }

    free_block* kept_[classes] = {};
    std::uint16_t kept_count_[classes] = {};
    std::vector<page_block> pages_;
};

// A body being sent: the session's copy, and how much of it has gone.
struct outgoing_body {
    std::string bytes;
    std::size_t sent = 0;
    bool more = false;
};

std::string_view view(const std::uint8_t* p, std::size_t n) noexcept {
    return {reinterpret_cast<const char*>(p), n};
}

} // namespace

bool h2_flooded(std::error_code e) noexcept {
    return e.category() == h2_category() &&
           (e.value() == NGHTTP2_ERR_FLOODED || e.value() == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS);
}

const std::error_category& h2_category() noexcept {
    static const h2_error_category c;
    return c;
}

struct h2_session::impl {
    h2_events& events;
    counting_allocator counter;
    nghttp2_mem mem{};
    nghttp2_session* session = nullptr;
    bool settings_received = false;
    bool failed_away = false;
    bool cut_in_fields = false; // set by the owner from inside on_h2_field
    bool drained = true;        // the last produce() emptied nghttp2's output: the frame buffer's bytes are dead
    bool used_since_trim = false;
    h2_tally tally;
    // Bodies being sent, by stream, each where its data provider points until the stream closes.
    std::map<std::int32_t, std::unique_ptr<outgoing_body>> bodies;

    explicit impl(h2_events& e) : events(e) {
        mem.mem_user_data = &counter;
        mem.malloc = counting_allocator::allocate;
        mem.free = counting_allocator::release;
        mem.calloc = counting_allocator::allocate_zeroed;
        mem.realloc = counting_allocator::reallocate;
    }
    ~impl() { nghttp2_session_del(session); }

    static impl& of(void* user) { return *static_cast<impl*>(user); }

    static int on_begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
        h2_tally& t = of(user).tally;
        switch (hd->type) {
        case NGHTTP2_DATA:
            t.control_frames += hd->length == 0 && (hd->flags & NGHTTP2_FLAG_END_STREAM) == 0 ? 1 : 0;
            break;
        case NGHTTP2_HEADERS:
            t.header_block_open = (hd->flags & NGHTTP2_FLAG_END_HEADERS) == 0;
            break;
        case NGHTTP2_CONTINUATION:
            t.control_frames += hd->length == 0 ? 1 : 0;
            t.header_block_open = (hd->flags & NGHTTP2_FLAG_END_HEADERS) == 0;
            break;
        case NGHTTP2_RST_STREAM: // counted by the stream it ends
        case NGHTTP2_GOAWAY:
            break;
        default: // SETTINGS, PING, WINDOW_UPDATE, PRIORITY, PUSH_PROMISE, extensions
            ++t.control_frames;
            break;
        }
        return 0;
    }
    static int on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user) {
        if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR) {
            of(user).failed_away = true;
        }
        return 0;
    }
    static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
                         const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
        impl& self = of(user);
        self.events.on_h2_field(frame->hd.stream_id, view(name, namelen), view(value, valuelen));
        if (self.cut_in_fields) {
            self.cut_in_fields = false;
            return NGHTTP2_ERR_CALLBACK_FAILURE; // receive() stops here, the block's rest unread
        }
        return 0;
    }
    static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
        h2_events& e = of(user).events;
        switch (frame->hd.type) {
        case NGHTTP2_HEADERS:
            e.on_h2_headers(frame->hd.stream_id);
            break;
        case NGHTTP2_GOAWAY:
            e.on_h2_goaway(frame->goaway.last_stream_id, static_cast<h2_error>(frame->goaway.error_code));
            return 0;
        case NGHTTP2_DATA:
            break;
        case NGHTTP2_SETTINGS:
            of(user).settings_received = of(user).settings_received || (frame->hd.flags & NGHTTP2_FLAG_ACK) == 0;
            return 0;
        default:
            return 0;
        }
        if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
            e.on_h2_end(frame->hd.stream_id);
        }
        return 0;
    }
    static int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream, const std::uint8_t* data,
                             std::size_t length, void* user) {
        of(user).events.on_h2_data(stream, view(data, length));
        return 0;
    }
    static int on_stream_close(nghttp2_session*, std::int32_t stream, std::uint32_t error, void* user) {
        impl& self = of(user);
        self.bodies.erase(stream);
        self.events.on_h2_closed(stream, static_cast<h2_error>(error));
        return 0;
    }
    template <typename Body>
    static ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                             std::uint32_t* flags, nghttp2_data_source* source, void*) {
        auto* body = static_cast<Body*>(source->ptr);
        const std::size_t n = std::min(length, body->bytes.size() - body->sent);
        if (n == 0 && body->more) {
            return NGHTTP2_ERR_DEFERRED; // until resume()
        }
        std::memcpy(buf, body->bytes.data() + body->sent, n);
        body->sent += n;
        if (body->sent == body->bytes.size() && !body->more) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
        }
        return static_cast<ssize_t>(n);
    }
};

// The fields as nghttp2 takes them, pointing into the caller's strings (nghttp2 copies them when it queues): on the
// stack for the usual few, on the heap past them.
class nv_array {
public:
    explicit nv_array(std::span<const h2_field> fields) : size_(fields.size()) {
        if (size_ > on_stack_.size()) {
            on_heap_.resize(size_);
        }
        nghttp2_nv* to = data();
        for (const h2_field& f : fields) {
            *to++ = {reinterpret_cast<std::uint8_t*>(const_cast<char*>(f.name.data())),
                     reinterpret_cast<std::uint8_t*>(const_cast<char*>(f.value.data())), f.name.size(), f.value.size(),
                     NGHTTP2_NV_FLAG_NONE};
        }
    }
    nghttp2_nv* data() noexcept { return size_ > on_stack_.size() ? on_heap_.data() : on_stack_.data(); }
    std::size_t size() const noexcept { return size_; }

private:
    std::size_t size_;
    std::array<nghttp2_nv, 32> on_stack_;
    std::vector<nghttp2_nv> on_heap_;
};

h2_session::h2_session(std::unique_ptr<impl> p) noexcept : impl_(std::move(p)) {}
h2_session::~h2_session() = default;

std::unique_ptr<h2_session> h2_session::make(role r, h2_events& events, const h2_settings& settings) {
    auto p = std::make_unique<impl>(events);
    nghttp2_session_callbacks* callbacks = nullptr;
    if (nghttp2_session_callbacks_new(&callbacks) != 0) {
        return nullptr;
    }
    nghttp2_session_callbacks_set_on_header_callback(callbacks, impl::on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, impl::on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, impl::on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, impl::on_stream_close);
    nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, impl::on_begin_frame);
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, impl::on_frame_send);
    nghttp2_option* option = nullptr;
    if (nghttp2_option_new(&option) != 0) {
        nghttp2_session_callbacks_del(callbacks);
        return nullptr;
    }
    nghttp2_option_set_no_closed_streams(option, 1); // no RFC 7540 priority tree kept for closed streams
    nghttp2_option_set_no_auto_window_update(option, settings.consume_by_hand ? 1 : 0);
    if (settings.stream_reset_burst != 0) {
        nghttp2_option_set_stream_reset_rate_limit(option, settings.stream_reset_burst, settings.stream_reset_rate);
    }
    p->counter.creating = true;
    const int made = r == role::client ? nghttp2_session_client_new3(&p->session, callbacks, p.get(), option, &p->mem)
                                       : nghttp2_session_server_new3(&p->session, callbacks, p.get(), option, &p->mem);
    p->counter.creating = false;
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);
    if (made != 0) {
        return nullptr;
    }
    std::vector<nghttp2_settings_entry> entries{
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, settings.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings.initial_window_size},
        {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, settings.max_frame_size},
        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, settings.header_table_size},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings.max_header_list_size},
    };
    if (r == role::client) {
        entries.push_back({NGHTTP2_SETTINGS_ENABLE_PUSH, 0});
    }
    if (nghttp2_submit_settings(p->session, NGHTTP2_FLAG_NONE, entries.data(), entries.size()) != 0 ||
        nghttp2_session_set_local_window_size(p->session, NGHTTP2_FLAG_NONE, 0,
                                              static_cast<std::int32_t>(settings.connection_window)) != 0) {
        return nullptr;
    }
    return std::unique_ptr<h2_session>(new h2_session(std::move(p)));
}

std::error_code h2_session::receive(std::string_view bytes) {
    const ssize_t n =
        nghttp2_session_mem_recv(impl_->session, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    impl_->used_since_trim = true;
    return n < 0 ? h2_code(n) : std::error_code{};
}

std::error_code h2_session::produce(std::string& out, std::size_t high_water) {
    while (out.size() < high_water) {
        const std::uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(impl_->session, &data);
        impl_->drained = n == 0;
        if (n < 0) {
            return h2_code(n);
        }
        if (n == 0) {
            break;
        }
        impl_->used_since_trim = true;
        out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    return {};
}

bool h2_session::wants_read() const noexcept {
    return nghttp2_session_want_read(impl_->session) != 0;
}

bool h2_session::wants_write() const noexcept {
    return nghttp2_session_want_write(impl_->session) != 0;
}

bool h2_session::may_open_stream() const noexcept {
    return nghttp2_session_check_request_allowed(impl_->session) != 0;
}

std::int32_t h2_session::request(std::span<const h2_field> fields, std::string_view body) {
    nv_array nv(fields);
    if (body.empty()) {
        return nghttp2_submit_request(impl_->session, nullptr, nv.data(), nv.size(), nullptr, nullptr);
    }
    // nghttp2 keeps a copy of the provider: it points at the body's final place before the stream has an id.
    auto kept = std::make_unique<outgoing_body>(outgoing_body{std::string(body), 0});
    nghttp2_data_provider provider{};
    provider.source.ptr = kept.get();
    provider.read_callback = impl::read_body<outgoing_body>;
    const std::int32_t stream =
        nghttp2_submit_request(impl_->session, nullptr, nv.data(), nv.size(), &provider, nullptr);
    if (stream > 0) {
        impl_->bodies.insert_or_assign(stream, std::move(kept));
    }
    return stream;
}

std::int32_t h2_session::request(std::span<const h2_field> fields, h2_body* body, void* user) {
    nv_array nv(fields);
    if (body == nullptr) {
        return nghttp2_submit_request(impl_->session, nullptr, nv.data(), nv.size(), nullptr, user);
    }
    nghttp2_data_provider provider{};
    provider.source.ptr = body;
    provider.read_callback = impl::read_body<h2_body>;
    return nghttp2_submit_request(impl_->session, nullptr, nv.data(), nv.size(), &provider, user);
}

void* h2_session::stream_user(std::int32_t stream) const noexcept {
    return nghttp2_session_get_stream_user_data(impl_->session, stream);
}

bool h2_session::set_stream_user(std::int32_t stream, void* user) noexcept {
    return nghttp2_session_set_stream_user_data(impl_->session, stream, user) == 0;
}

std::uint32_t h2_session::peer_max_concurrent_streams() const noexcept {
    return nghttp2_session_get_remote_settings(impl_->session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

bool h2_session::peer_settings_received() const noexcept {
    return impl_->settings_received;
}

std::error_code h2_session::respond(std::int32_t stream, std::span<const h2_field> fields, std::string_view body) {
    nv_array nv(fields);
    if (body.empty()) {
        const int done = nghttp2_submit_response(impl_->session, stream, nv.data(), nv.size(), nullptr);
        return done != 0 ? h2_code(done) : std::error_code{};
    }
    auto kept = std::make_unique<outgoing_body>(outgoing_body{std::string(body), 0});
    nghttp2_data_provider provider{};
    provider.source.ptr = kept.get();
    provider.read_callback = impl::read_body<outgoing_body>;
    const int done = nghttp2_submit_response(impl_->session, stream, nv.data(), nv.size(), &provider);
    if (done != 0) {
        return h2_code(done);
    }
    impl_->bodies.insert_or_assign(stream, std::move(kept));
    return {};
}

std::error_code h2_session::respond(std::int32_t stream, std::span<const h2_field> fields, h2_body* body) {
    nv_array nv(fields);
    nghttp2_data_provider provider{};
    provider.source.ptr = body;
    provider.read_callback = impl::read_body<h2_body>;
    const int done =
        nghttp2_submit_response(impl_->session, stream, nv.data(), nv.size(), body != nullptr ? &provider : nullptr);
    return done != 0 ? h2_code(done) : std::error_code{};
}

std::error_code h2_session::resume(std::int32_t stream) {
    const int done = nghttp2_session_resume_data(impl_->session, stream);
    return done != 0 ? h2_code(done) : std::error_code{};
}

std::error_code h2_session::consume(std::int32_t stream, std::size_t bytes) {
    if (bytes == 0) {
        return {};
    }
    const int done = nghttp2_session_consume(impl_->session, stream, bytes);
    return done != 0 ? h2_code(done) : std::error_code{};
}

std::error_code h2_session::consume_connection(std::size_t bytes) {
    if (bytes == 0) {
        return {};
    }
    const int done = nghttp2_session_consume_connection(impl_->session, bytes);
    return done != 0 ? h2_code(done) : std::error_code{};
}

std::error_code h2_session::reset(std::int32_t stream, h2_error error) {
    const int done =
        nghttp2_submit_rst_stream(impl_->session, NGHTTP2_FLAG_NONE, stream, static_cast<std::uint32_t>(error));
    return done != 0 ? h2_code(done) : std::error_code{};
}

std::error_code h2_session::go_away(h2_error error) {
    const int done = nghttp2_session_terminate_session(impl_->session, static_cast<std::uint32_t>(error));
    return done != 0 ? h2_code(done) : std::error_code{};
}

std::error_code h2_session::shut_down() {
    const int done =
        nghttp2_submit_goaway(impl_->session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(impl_->session), NGHTTP2_NO_ERROR, nullptr, 0);
    return done != 0 ? h2_code(done) : std::error_code{};
}

void h2_session::cut_in_fields() noexcept {
    impl_->cut_in_fields = true;
}

const h2_tally& h2_session::tally() const noexcept {
    return impl_->tally;
}

bool h2_session::failed_away() const noexcept {
    return impl_->failed_away;
}

std::size_t h2_session::trim() noexcept {
    impl_->counter.trim();
    if (!impl_->used_since_trim || !impl_->drained || wants_write()) {
        return 0;
    }
    impl_->used_since_trim = false;
    return impl_->counter.give_back_pages();
}

std::size_t h2_session::bytes_held() const noexcept {
    return impl_->counter.held;
}

} // namespace hotpath::http
