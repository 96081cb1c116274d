# The two commands of the README. CMake does the real work in build/.
#   make run   installs what is missing, builds, runs the default scenario
#   make test  installs what is missing, builds, runs every test
JOBS ?= $(shell nproc)
BUILD ?= build
CMAKE_FLAGS ?=
SCENARIO ?= scenarios/128xh100_70b.toml

.PHONY: deps build run test clean
deps:
	@tools/install-deps.sh
build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
run: build
	$(BUILD)/mfusim $(SCENARIO)
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
clean:
	rm -rf $(BUILD)
