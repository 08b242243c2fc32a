/*
 * late_runtime.c - a C program (no C++ runtime at start) that dlopens a C++
 * module later, like python importing a C++ extension, with nodal linked
 * in or preloaded: the module's operator new is nodal's and a failure
 * throws std::bad_alloc it can catch, instead of aborting (libnodal's weak
 * references to the runtime were bound, to nothing, before the runtime
 * came; the failure path finds it then).
 *
 *   late_runtime PLUGIN.so
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int libstdcxx_mapped(void)
{
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "libstdc++"))
            found = 1;
    fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
        return 2;
    }
    /* malloc is nodal's (linked or preloaded): the block is one nodal knows. */
    char *probe = malloc(100);
    size_t (*usable)(const void *) = (size_t (*)(const void *))dlsym(RTLD_DEFAULT, "nodal_usable_size");
    if (!probe || !usable || usable(probe) < 100) {
        printf("FAIL cxx_runtime_loaded_later_gets_bad_alloc: expected nodal to be malloc\n");
        return 1;
    }
    free(probe);
    if (libstdcxx_mapped() != 0) {
        printf("FAIL cxx_runtime_loaded_later_gets_bad_alloc: expected no libstdc++ before dlopen\n");
        return 1;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL cxx_runtime_loaded_later_gets_bad_alloc: expected dlopen to work: %s\n", dlerror());
        return 1;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "plugin_run");
    int r = run ? run() : -1;
    if (r != 0) {
        printf("FAIL cxx_runtime_loaded_later_gets_bad_alloc: expected the module's checks to pass, "
               "check %d failed\n", r);
        return 1;
    }
    printf("PASS cxx_runtime_loaded_later_gets_bad_alloc\n");
    return 0;
}
