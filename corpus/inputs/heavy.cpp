// A template-heavy C++ translation unit for the compiler program (cc1plus -O2): Boost.Geometry,
// Boost.Spirit X3, std::regex, std::ranges, std::variant and containers, instantiated over
// several types so that parsing, template instantiation and optimisation all do real work.
#include <algorithm>
#include <bits/stdc++.h>
#include <boost/geometry.hpp>
#include <boost/geometry/geometries/point_xy.hpp>
#include <boost/geometry/geometries/polygon.hpp>
#include <boost/fusion/include/std_pair.hpp>
#include <boost/spirit/home/x3.hpp>
#include <ranges>
#include <regex>
#include <variant>

namespace bg = boost::geometry;
namespace x3 = boost::spirit::x3;

template <typename T>
using Point = bg::model::d2::point_xy<T>;
template <typename T>
using Polygon = bg::model::polygon<Point<T>>;

template <typename T>
T geometry_work(int n)
{
    Polygon<T> a, b;
    for (int i = 0; i < n; ++i) {
        double t = 6.283185307 * i / n;
        bg::append(a.outer(), Point<T>(T(10 * std::cos(t)), T(10 * std::sin(t))));
        bg::append(b.outer(), Point<T>(T(3 + 9 * std::cos(t)), T(2 + 7 * std::sin(t))));
    }
    bg::correct(a);
    bg::correct(b);
    std::vector<Polygon<T>> out;
    bg::intersection(a, b, out);
    T area = 0;
    for (auto const& p : out)
        area += bg::area(p);
    bg::model::box<Point<T>> box;
    bg::envelope(a, box);
    return area + bg::distance(Point<T>(0, 0), b) + bg::perimeter(a) + bg::get<0>(box.min_corner());
}

template <typename Iter>
bool parse_csv_numbers(Iter first, Iter last, std::vector<double>& v)
{
    return x3::phrase_parse(first, last, x3::double_ % ',', x3::space, v) && first == last;
}

struct Assign {
    std::string name;
    std::variant<long, double, std::string> value;
};

template <typename Iter>
bool parse_assign(Iter first, Iter last, std::vector<std::pair<std::string, double>>& out)
{
    auto ident = x3::rule<class ident, std::string>{} = x3::lexeme[(x3::alpha | x3::char_('_')) >> *(x3::alnum | x3::char_('_'))];
    auto kv = x3::rule<class kv, std::pair<std::string, double>>{} = ident >> '=' >> x3::double_;
    return x3::phrase_parse(first, last, kv % ';', x3::space, out);
}

template <typename K, typename V>
std::map<K, V> tally(std::vector<std::pair<K, V>> const& xs)
{
    std::map<K, V> m;
    for (auto const& [k, v] : xs)
        m[k] += v;
    return m;
}

template <typename T>
auto ranges_work(std::vector<T> v)
{
    std::ranges::sort(v);
    auto even = v | std::views::filter([](T x) { return static_cast<long>(x) % 2 == 0; })
              | std::views::transform([](T x) { return x * x; });
    T s{};
    for (T x : even | std::views::take(100))
        s += x;
    std::unordered_map<long, std::vector<T>> buckets;
    for (T x : v)
        buckets[static_cast<long>(x) % 17].push_back(x);
    std::set<T> uniq(v.begin(), v.end());
    return s + static_cast<T>(buckets.size() + uniq.size());
}

std::string regex_work(std::string const& text)
{
    std::regex word(R"((\w+)@(\w+)\.(org|com|net))");
    std::regex date(R"((\d{4})-(\d{2})-(\d{2}))");
    std::string out = std::regex_replace(text, date, "$3/$2/$1");
    std::smatch m;
    std::string::const_iterator it = out.cbegin();
    while (std::regex_search(it, out.cend(), m, word)) {
        out += m[2].str();
        it = m.suffix().first;
    }
    return out;
}

using Value = std::variant<long, double, std::string, std::vector<int>>;

struct Visit {
    long operator()(long x) const { return x; }
    long operator()(double x) const { return static_cast<long>(x); }
    long operator()(std::string const& s) const { return static_cast<long>(s.size()); }
    long operator()(std::vector<int> const& v) const { return std::accumulate(v.begin(), v.end(), 0L); }
};

int main(int argc, char** argv)
{
    std::string text = argc > 1 ? argv[1] : "mail bob@example.org on 2024-01-31, alice@test.com";
    std::vector<double> nums;
    parse_csv_numbers(text.begin(), text.end(), nums);
    std::vector<std::pair<std::string, double>> kvs;
    parse_assign(text.begin(), text.end(), kvs);
    auto m = tally(kvs);
    std::vector<Value> vals{1L, 2.5, std::string("abc"), std::vector<int>{1, 2, 3}};
    long acc = 0;
    for (auto const& v : vals)
        acc += std::visit(Visit{}, v);
    double g = geometry_work<double>(64);
    auto r1 = ranges_work(std::vector<int>{5, 3, 8, 1, 9, 2});
    auto r2 = ranges_work(std::vector<long>{5, 3, 8, 1, 9, 2});
    auto r3 = ranges_work(std::vector<double>{5, 3, 8, 1, 9, 2});
    std::cout << regex_work(text) << acc << g << r1 << r2 << r3 << m.size() << nums.size() << '\n';
}
