#include <catch2/catch.hpp>

#include "tokenizer/jinja/jinja.h"

TEST_CASE("jinja smoke") {
    nlohmann::ordered_json ctx = {{"x", 1}};
    REQUIRE(vt::jinja::render_chat_template("a{{ x }}", ctx) == "a1");
}
