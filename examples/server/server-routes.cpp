#include "server-routes.h"

#include <cstdio>
#include <limits>

#include "server-conn.h"
#include "server-engine.h"
#include "server-errors.h"
#include "server-generate.h"
#include "server-lora.h"
#include "server-metrics.h"
#include "server-structured.h"

namespace vts {

using json = nlohmann::json;

void log_kv_pool_once(ServerState &st) {
    if (st.pool_logged.load()) return;
    const vt_engine_stats s = st.engine->stats();
    if (s.kv_blocks_total == 0 || st.pool_logged.exchange(true)) return;
    // Blocks summed over the cache groups (sliding-window layers have their own).
    std::fprintf(stderr, "vt-server: KV cache: %u blocks of %u tokens (%.1f MiB), max_model_len %u\n",
                 s.kv_blocks_total, s.kv_block_size, (double)(s.kv_cache_bytes - s.state_bytes) / (1024.0 * 1024.0),
                 s.max_model_len);
    if (s.state_slots)
        std::fprintf(stderr, "vt-server: recurrent state: %u slots (requests at once) and %u prefix-cache snapshots "
                     "(%.1f MiB of the pool)\n", s.state_slots, s.state_snapshots,
                     (double)s.state_bytes / (1024.0 * 1024.0));
}

namespace {

bool starts_with(const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; }

void send_error(httplib::Response &res, const ApiError &e) {
    res.status = e.status;
    res.set_content(dump_json(error_body(e)), "application/json");
}

void send_json(httplib::Response &res, const json &j) { res.set_content(dump_json(j), "application/json"); }

// Compares without an early exit, so timing does not reveal the key.
bool same_secret(const std::string &a, const std::string &b) {
    unsigned char diff = a.size() != b.size();
    for (size_t i = 0; i < a.size(); ++i) diff |= (unsigned char)(a[i] ^ b[i % (b.size() ? b.size() : 1)]);
    return diff == 0 && !b.empty();
}

bool authorized(const ServerState &st, const httplib::Request &req) {
    if (st.opts.api_key.empty()) return true;
    const std::string h = req.get_header_value("Authorization");
    static const std::string bearer = "Bearer ";
    return starts_with(h, bearer.c_str()) && same_secret(h.substr(bearer.size()), st.opts.api_key);
}

// 408 for a request not read in time (server-conn.h); the connection closes.
ApiError timeout_error(const char *what) {
    return ApiError(408, std::string(what) + " did not arrive in time (see --header-timeout and --body-timeout)",
                    "invalid_request_error", "", "request_timeout");
}

// Reads the body into `body` up to `cap` bytes (0: no cap). A declared
// Content-Length over the cap is refused by httplib itself
// (set_payload_max_length) and skipped without buffering; a chunked body
// over the cap is read into nothing. Returns the error to answer, if any.
std::optional<ApiError> read_body(const httplib::ContentReader &reader, httplib::Response &res, uint64_t cap,
                                  std::string &body) {
    bool too_large = false;
    const bool ok = reader([&](const char *data, size_t len) {
        if (too_large) return true;  // drain the rest into nothing
        if (cap && body.size() + len > cap) {
            too_large = true;
            body.clear();
            body.shrink_to_fit();
            return true;
        }
        body.append(data, len);
        return true;
    });
    // A body that was not read to its end leaves the connection out of step:
    // whatever of it comes later would be parsed as the next request (a
    // stalled client's rest read as a "bad request" its next request then
    // gets). Such a connection is closed after the answer.
    if (const char *late = request_timed_out()) {
        res.set_header("Connection", "close");
        return timeout_error(late);
    }
    if (too_large || res.status == 413)
        return ApiError(413,
                        "the request body is larger than this server accepts (" + std::to_string(cap) +
                            " bytes; see --max-body-bytes)",
                        "invalid_request_error", "", "request_too_large");
    if (!ok) {
        res.set_header("Connection", "close");
        request_broken();
        return ApiError(400, "cannot read the request body: the client sent less than its Content-Length, "
                             "or stalled (closed)");
    }
    return std::nullopt;
}

bool has_body(const httplib::Request &req) {
    return req.get_header_value<uint64_t>("Content-Length") > 0 || req.has_header("Transfer-Encoding");
}

// Answers 401 without the API key, 503 while draining; false otherwise.
bool refuse(const ServerState &st, const httplib::Request &req, httplib::Response &res) {
    if (!authorized(st, req)) {
        send_error(res, ApiError(401, "a valid API key is required: 'Authorization: Bearer KEY'",
                                 "authentication_error", "", "invalid_api_key"));
        res.set_header("WWW-Authenticate", "Bearer");
        return true;
    }
    if (st.draining.load()) {
        send_error(res, ApiError(503, "the server is shutting down", "server_error"));
        return true;
    }
    return false;
}

// vLLM's model cards: the base model's root is its path and it has no
// parent; an adapter's root is its path and its parent the base model.
json model_card(const ServerState &st) {
    return {{"id", st.model_name},
            {"object", "model"},
            {"created", st.created},
            {"owned_by", "vt"},
            {"root", st.opts.model},
            {"parent", nullptr},
            {"max_model_len", st.engine->stats().max_model_len}};
}

json model_card(const ServerState &st, const LoraAdapter &a) {
    return {{"id", a.name},
            {"object", "model"},
            {"created", a.created},
            {"owned_by", "vt"},
            {"root", a.path},
            {"parent", st.model_name},
            {"max_model_len", st.engine->stats().max_model_len}};
}

// A POST route of /v1 with a JSON body: read within the body cap, then
// the API key and draining are checked (see the pre-routing handler).
template <typename Handler>
httplib::Server::HandlerWithContentReader with_body(ServerState &st, uint64_t cap, Handler handler) {
    return [&st, cap, handler](const httplib::Request &req, httplib::Response &res,
                               const httplib::ContentReader &reader) {
        std::string body;
        if (req.is_multipart_form_data()) {
            // Read (into nothing) so that the connection stays in step;
            // httplib's plain reader cannot take a multipart body.
            reader([](const httplib::MultipartFormData &) { return true; },
                   [](const char *, size_t) { return true; });
            request_body_read();
            send_error(res, ApiError(415, "the request body must be JSON (Content-Type: application/json), not "
                                          "multipart/form-data",
                                     "invalid_request_error", "", "unsupported_media_type"));
            return;
        }
        auto err = read_body(reader, res, cap, body);
        request_body_read();
        if (err) {
            send_error(res, *err);
            return;
        }
        if (refuse(st, req, res)) return;
        handler(st, body, res);
    };
}

} // namespace

void setup_routes(httplib::Server &svr, ServerState &st) {
    const uint64_t cap = st.opts.guards.max_body_bytes;
    svr.set_payload_max_length(cap ? (size_t)cap : std::numeric_limits<size_t>::max());

    // /v1/* needs the key, and nothing new starts while draining. Requests
    // with a body are checked by their handler once the body is read:
    // httplib 0.11 keeps the connection open after an early answer, and an
    // unread body would be parsed as the next request.
    svr.set_pre_routing_handler([&st](const httplib::Request &req, httplib::Response &res) {
        request_head_read(has_body(req));  // the body's deadline starts, or reading is over
        if (!starts_with(req.path, "/v1/") || has_body(req)) return httplib::Server::HandlerResponse::Unhandled;
        return refuse(st, req, res) ? httplib::Server::HandlerResponse::Handled
                                    : httplib::Server::HandlerResponse::Unhandled;
    });

    // curl and others ask before sending a large body: refuse it up front.
    svr.set_expect_100_continue_handler([cap](const httplib::Request &req, httplib::Response &res) {
        const uint64_t len = req.get_header_value<uint64_t>("Content-Length");
        if (cap && len > cap) {
            send_error(res, ApiError(413, "the request body is larger than this server accepts (" +
                                              std::to_string(cap) + " bytes; see --max-body-bytes)",
                                     "invalid_request_error", "", "request_too_large"));
            res.set_header("Connection", "close");
            return 413;
        }
        return 100;
    });

    // Errors httplib answers itself (404, 413 of a declared length, 400 of a
    // bad request line) get an OpenAI error object too.
    svr.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request &, httplib::Response &res) {
        if (const char *late = request_timed_out()) {  // httplib answers a failed read with 400
            send_error(res, timeout_error(late));
            res.set_header("Connection", "close");
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        const char *msg = res.status == 404   ? "no such endpoint"
                          : res.status == 413 ? "the request body is too large (see --max-body-bytes)"
                          : res.status == 400 ? "bad request"
                                              : "request failed";
        send_error(res, ApiError(res.status, msg, res.status >= 500 ? "server_error" : "invalid_request_error"));
        return httplib::Server::HandlerResponse::Handled;
    }));

    svr.set_exception_handler([](const httplib::Request &, httplib::Response &res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
            if (ep) std::rethrow_exception(ep);
        } catch (const std::exception &e) {
            what = e.what();
        } catch (...) {
        }
        send_error(res, ApiError(500, what, "server_error"));
    });

    // Counted before the response goes out (httplib runs this just before
    // writing it, the logger only after): a client that has its response and
    // then reads /metrics finds it counted.
    // Runs once a response is written: the next byte on the connection
    // starts the next request's deadline.
    svr.set_logger([](const httplib::Request &, const httplib::Response &) { request_done(); });

    svr.set_post_routing_handler([&st](const httplib::Request &req, httplib::Response &res) {
        if (starts_with(req.path, "/v1/")) st.metrics->count_response(res.status);
    });

    svr.Get("/health", [&st](const httplib::Request &, httplib::Response &res) {
        if (st.draining.load()) {
            res.status = 503;
            send_json(res, {{"status", "draining"}});
        } else {
            send_json(res, {{"status", "ok"}});
        }
    });
    svr.Get("/version", [&st](const httplib::Request &, httplib::Response &res) {
        const uint32_t abi = vt_abi_version();
        send_json(res, {{"version", vt_version()},
                        {"abi_version", std::to_string(abi >> 16) + "." + std::to_string(abi & 0xffff)},
                        {"model", st.model_name}});
    });
    svr.Get("/metrics", [&st](const httplib::Request &, httplib::Response &res) {
        res.set_content(st.metrics->render(st.engine->stats()) + st.grammars->render_metrics(),
                        "text/plain; version=0.0.4; charset=utf-8");
    });
    svr.Get("/v1/models", [&st](const httplib::Request &, httplib::Response &res) {
        json data = json::array({model_card(st)});
        for (const LoraRef &a : st.loras->list()) data.push_back(model_card(st, *a));
        send_json(res, {{"object", "list"}, {"data", data}});
    });
    svr.Get(R"(/v1/models/(.+))", [&st](const httplib::Request &req, httplib::Response &res) {
        const std::string id = req.matches[1];
        if (id == st.model_name) {
            send_json(res, model_card(st));
        } else if (const LoraRef a = st.loras->find(id)) {
            send_json(res, model_card(st, *a));
        } else {
            send_error(res, ApiError(404, "the model '" + id + "' does not exist", "invalid_request_error", "model",
                                     "model_not_found"));
        }
    });

    svr.Post("/v1/chat/completions",
             with_body(st, cap, [](ServerState &s, const std::string &b, httplib::Response &r) {
                 handle_generation(s, b, true, r);
             }));
    svr.Post("/v1/completions", with_body(st, cap, [](ServerState &s, const std::string &b, httplib::Response &r) {
                 handle_generation(s, b, false, r);
             }));
    svr.Post("/v1/load_lora_adapter", with_body(st, cap, handle_load_lora));
    svr.Post("/v1/unload_lora_adapter", with_body(st, cap, handle_unload_lora));
}

} // namespace vts
