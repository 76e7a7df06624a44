#include "lab/tests/svg_check.hpp"

#include <cctype>
#include <vector>

namespace sixways::lab::testing {

std::string xml_problem(std::string_view text) {
    std::vector<std::string> open;
    std::size_t at = 0;
    auto problem = [&](const std::string& what) { return "at " + std::to_string(at) + ": " + what; };
    while ((at = text.find('<', at)) != std::string_view::npos) {
        std::size_t end = text.find('>', at);
        if (end == std::string_view::npos) {
            return problem("unterminated tag");
        }
        std::string_view tag = text.substr(at + 1, end - at - 1);
        bool closing = !tag.empty() && tag[0] == '/';
        bool self_closing = !tag.empty() && tag.back() == '/';
        std::string_view body = tag.substr(closing ? 1 : 0);
        std::size_t name_end = 0;
        while (name_end < body.size() && (std::isalnum(static_cast<unsigned char>(body[name_end])) ||
                                          body[name_end] == '-' || body[name_end] == ':')) {
            ++name_end;
        }
        std::string name(body.substr(0, name_end));
        if (name.empty()) {
            return problem("a tag without a name");
        }
        // Attributes: name="value" pairs, the values without '<'.
        std::size_t quotes = 0;
        for (char c : body) {
            quotes += c == '"' ? 1 : 0;
            if (c == '<') {
                return problem("'<' inside a tag");
            }
        }
        if (quotes % 2 != 0) {
            return problem("unbalanced quotes in <" + name + ">");
        }
        if (closing) {
            if (open.empty() || open.back() != name) {
                return problem("</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">"));
            }
            open.pop_back();
        } else if (!self_closing) {
            open.push_back(name);
        }
        // The text up to the next tag: '&' only as an entity.
        std::size_t next = text.find('<', end);
        std::string_view content = text.substr(end + 1, next == std::string_view::npos
                                                             ? std::string_view::npos
                                                             : next - end - 1);
        for (std::size_t amp = content.find('&'); amp != std::string_view::npos;
             amp = content.find('&', amp + 1)) {
            std::string_view rest = content.substr(amp);
            if (rest.rfind("&amp;", 0) != 0 && rest.rfind("&lt;", 0) != 0 &&
                rest.rfind("&gt;", 0) != 0 && rest.rfind("&quot;", 0) != 0 &&
                rest.rfind("&apos;", 0) != 0) {
                return problem("a bare '&' in text");
            }
        }
        at = end + 1;
    }
    if (!open.empty()) {
        return "<" + open.back() + "> is never closed";
    }
    return "";
}

std::size_t count_elements(std::string_view text, std::string_view name, std::string_view with) {
    std::size_t count = 0;
    const std::string start = "<" + std::string(name);
    for (std::size_t at = text.find(start); at != std::string_view::npos;
         at = text.find(start, at + 1)) {
        std::size_t after = at + start.size();
        if (after < text.size() && text[after] != ' ' && text[after] != '>' && text[after] != '/') {
            continue;  // a longer name: <rect> is not <r>
        }
        std::string_view tag = text.substr(at, text.find('>', at) - at);
        if (with.empty() || tag.find(with) != std::string_view::npos) {
            ++count;
        }
    }
    return count;
}

}  // namespace sixways::lab::testing
