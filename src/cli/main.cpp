#include <cstdio>
int main() { std::puts("ferrum"); return 0; }
