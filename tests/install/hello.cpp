// A C++ program built against an installed nodal: nodal.hpp's allocator and
// node-typed class, and nodal's operator new (the usable size of a plain
// `new` block is nodal's answer, not 0).
#include <nodal.hpp>

#include <cstdio>
#include <vector>

struct item : nodal::on_node<0> {
    int value = 42;
};

int main()
{
    std::vector<int, nodal::node_allocator<int, 0>> v(1000, 7);
    item *it = new item;
    int *plain = new int(1);
    std::printf("hello from nodal.hpp: %d %d, usable %zu\n", v[999], it->value,
                nodal_usable_size(plain));
    bool ok = nodal_usable_size(plain) >= sizeof(int) && nodal_node_of(it) == 0;
    delete plain;
    delete it;
    return ok ? 0 : 1;
}
