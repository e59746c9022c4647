"""DRAM and HBM-PIM presets (each value cites its source), spec files and the one lookup.

:func:`get_spec` resolves a preset name, a :class:`~sieve.dram.spec.DramSpec` or a JSON/TOML
spec file (:func:`load_spec`), with optional overrides. Reference notes: shared/reference/
hardware.md (§2, §5), ramulator2.md (§2-§4) and pim-simulators.md (§2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from sieve.dram.spec import DramOrg, DramSpec, DramTiming, PimConfig, ns_to_ck
from sieve.errors import ConfigError, choices, lookup
from sieve.validate import check_mapping, parse_document, read_text

__all__ = ["DEFAULT_DRAM_SPEC", "DEFAULT_SPEC", "MAX_BASE_DEPTH", "PRESETS", "get_spec",
           "load_spec"]


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------

_HBM3_BUS = {"ACT": 1.5, "ACTAB": 1.5, "ACTSB": 1.5, "ACTPB": 1.5, "PRE": 0.5, "PREA": 0.5,
             "PREAB": 0.5, "PRESB": 0.5, "PREPB": 0.5, "REFab": 0.5, "REFpb": 0.5}
"""HBM3 command-bus occupancy in CK: ACT is R-F-R = 1.5 CK, other row commands half a CK,
column commands 1 CK (Ramulator 2.1 hbm3.py ``command_cycles``); the PIM activates and
precharges as the ones they extend."""

_HBM2_BUS = {"ACT": 2.0, "ACTAB": 2.0, "ACTSB": 2.0, "ACTPB": 2.0}
"""HBM2 row commands: ACT takes 2 CK on the row bus (Ramulator 2.1 hbm2.py; AttAcc
HBM3-PIM.cpp "2-cycle ACT command")."""


def _hbm3_6400() -> DramSpec:
    # Ramulator 2.1 HBM3_6400Mbps timing preset with the HBM3_8Gb_8hi organisation
    # (ramulator2.md §2-3; CMU-SAFARI/ramulator2 python/ramulator/dram/hbm3.py @c5b1c3a).
    tck = 625  # 6.4 Gb/s per pin, CK = rate / 4 = 1.6 GHz
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=2,  # half-CK ticks: row commands on both edges
        nBL=2, nCL=20, nCWL=10, nRCDRD=31, nRCDWR=15, nRP=26, nRAS=45, nRC=72, nWR=33,
        nRTP=9, nCCDS=2, nCCDL=4, nCCDR=3, nRRDS=4, nRRDL=5, nFAW=24, nWTRS=7, nWTRL=10,
        nRTW=20, nPPD=2,
        nRFC=ns_to_ck(260, tck),  # 8 Gb die / 2 SIDs = 4 Gb per channel -> 260 ns (JESD238 T84)
        nRFCpb=320, nREFI=6240,  # preset values (200 ns, 3.9 us)
        nREFIpb=ns_to_ck(3900 / 32, tck),  # tREFI / banks per PC = 195
        nRREFD=8,  # preset value (the max(3 CK, 8 ns) formula would give 13; ramulator2.md §2)
    )
    org = DramOrg(stacks=1, channels=16, pseudochannels=2, sids=2, bankgroups=4, banks=4,
                  rows=8192, columns=32, access_bytes=32, dq_bits=32)
    return DramSpec(
        name="hbm3-6400",
        description="HBM3 6.4 Gb/s, 8-Hi 8 Gb dies (= Ramulator 2.1 HBM3_6400Mbps/HBM3_8Gb_8hi)",
        org=org, timing=timing, bus_ck=_HBM3_BUS,
        sources={
            "timing": "Ramulator 2.1 hbm3.py HBM3_6400Mbps (ramulator2.md §2)",
            "org": "Ramulator 2.1 HBM3_8Gb_8hi, JESD238 Table 4 (ramulator2.md §3)",
            "nRFC": "JESD238 Table 84 via Ramulator resolver: 4 Gb/channel -> 260 ns",
            "bus": "Ramulator 2.1 command_cycles (ACT 1.5 CK, PRE/REF 0.5 CK)",
        },
    )


def _hbm3e_8000() -> DramSpec:
    # HBM3E at 8 Gb/s as on a B200 (hardware.md §1-2: 3996 MHz memory clock, 8 stacks, 16 ch x 2
    # PC, 8-Hi = 2 SIDs x 4 BG x 4 banks, 1 KB rows, 32 B per column). Timings: Ramulator 2.1
    # HBM3_8000Mbps preset (hbm3.py @300e25f: JEDEC ns held constant, CK scaled 1.25x from 6400).
    tck = 500
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=2,
        nBL=2, nCL=25, nCWL=13, nRCDRD=39, nRCDWR=19, nRP=33, nRAS=57, nRC=90, nWR=42,
        nRTP=12, nCCDS=2, nCCDL=5, nCCDR=4, nRRDS=5, nRRDL=7, nFAW=30, nWTRS=9, nWTRL=13,
        nRTW=25, nPPD=2,
        # 24 Gb die / 2 SIDs = 12 Gb per channel -> "<= 16 Gb" bucket = 450 ns (hardware.md §2.2
        # suggested B200 set; AttAcc's table would give 410 ns: a sensitivity case).
        nRFC=ns_to_ck(450, tck),
        nRFCpb=400, nREFI=7800,  # 200 ns, 3.9 us (Ramulator preset)
        nREFIpb=ns_to_ck(3900 / 32, tck),  # 122 ns for 32 banks per PC
        nRREFD=8,
    )
    # 24 Gb die, 8-Hi, 24 GB stack: 768 MiB per PC / 32 banks / 1 KB = 24 K rows; the engine
    # needs a power of two, so 32 K row addresses are modelled (only the row count changes).
    org = DramOrg(stacks=8, channels=16, pseudochannels=2, sids=2, bankgroups=4, banks=4,
                  rows=32768, columns=32, access_bytes=32, dq_bits=32)
    return DramSpec(
        name="hbm3e-8000",
        description="HBM3E 8 Gb/s, 8 stacks x 16 ch x 2 PC, 8-Hi (B200-like)",
        org=org, timing=timing, bus_ck=_HBM3_BUS,
        sources={
            "timing": "Ramulator 2.1 hbm3.py HBM3_8000Mbps (JEDEC ns scaled to tCK 0.5 ns)",
            "org": "hardware.md §1-2 (B200: 8 stacks, 16 ch x 2 PC, 8-Hi = 2 SID x 4 BG x 4)",
            "nRFC": "hardware.md §2.2 suggested B200 set: 12 Gb/channel -> 450 ns",
            "rows": "24 K rows derived (hardware.md §2.1), rounded up to 32 K (power of two)",
        },
    )


def _hbm2_2000() -> DramSpec:
    # Ramulator 2.1 HBM2_2000Mbps (hbm2.py, JESD235D; ramulator2.md §2). HBM2 pseudo-channel
    # mode: 8 channels x 2 PCs of 64 bits, BL4 = 32 B per burst, 4 BG x 4 banks per PC.
    tck = 1000
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=1,
        nBL=2, nCL=14, nCWL=5, nRCDRD=14, nRCDWR=12, nRP=14, nRAS=34, nRC=48, nWR=16,
        nRTP=5, nCCDS=2, nCCDL=4, nCCDR=0, nRRDS=4, nRRDL=4, nFAW=15, nWTRS=6, nWTRL=8,
        nRTW=14 + 2 + 2 - 5,  # nCL + nBL + 2 - nCWL (Ramulator 2.0 HBM2 RD->WR, tWPRE = 1 CK)
        nPPD=0,  # HBM2 has no tPPD
        nRFC=350, nRFCpb=160, nREFI=3900, nREFIpb=122, nRREFD=8,
    )
    org = DramOrg(stacks=1, channels=8, pseudochannels=2, sids=1, bankgroups=4, banks=4,
                  rows=16384, columns=32, access_bytes=32, dq_bits=64)
    return DramSpec(
        name="hbm2-2000",
        description="HBM2 2 Gb/s, pseudo-channel mode (= Ramulator 2.1 HBM2_2000Mbps)",
        org=org, timing=timing, bus_ck=_HBM2_BUS,
        sources={
            "timing": "Ramulator 2.1 hbm2.py HBM2_2000Mbps (ramulator2.md §2)",
            "org": "JESD235 pseudo-channel mode; 4 GB 4-Hi stack -> 16 K rows per bank",
            "nRTW": "Ramulator 2.0 HBM2 rule nCL + nBL + 2 - nCWL",
        },
    )


def _samsung_hbm2_pim() -> DramSpec:
    # Samsung HBM2-PIM "Aquabolt-XL" as in SAITPublic/PIMSimulator ini/HBM2_samsung_2M_16B_x64.ini
    # (pim-simulators.md §2; hardware.md §5): tCK 1 ns, BL4 on a 64-bit PC (32 B), 16 banks per
    # PC, one PIM block per 2 banks (8 per PC), 16 FP16 lanes, every PIM op costs tCCD_L.
    tck = 1000
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=1,
        nBL=2, nCL=20, nCWL=8, nRCDRD=14, nRCDWR=10, nRP=14, nRAS=33, nRC=47, nWR=16,
        # RD -> PRE and RD -> WR as PIMSimulator applies them (src/Configuration.h):
        # READ_TO_PRE_DELAY = AL + BL/2 + max(tRTPL, tCCDL) - tCCDL = 0 + 2 + 5 - 4, not the
        # ini's tRTPL 5; READ_TO_WRITE_DELAY = RL + BL/2 + tRTRS - WL = 20 + 2 + 1 - 8
        nRTP=3, nCCDS=2, nCCDL=4, nCCDR=0, nRRDS=4, nRRDL=6, nFAW=16, nWTRS=4, nWTRL=9,
        nRTW=20 + 2 + 1 - 8,
        nPPD=0, nRFC=350, nRFCpb=160, nREFI=3900, nREFIpb=121, nRREFD=8,
        nCCDAB=4,  # PIMSimulator issue #3: every PIM op is charged tCCD_L
        nMACRD=4,  # ⚠ assumption: one more tCCD_L to drain the PU pipeline before readback
    )
    org = DramOrg(stacks=4, channels=8, pseudochannels=2, sids=1, bankgroups=4, banks=4,
                  rows=16384, columns=32, access_bytes=32, dq_bits=64)
    pim = PimConfig(banks_per_pu=2, lanes=16, dtype_bytes=2, gbuf_bytes=256,
                    dual_row_buffer=False, pu_dtype="fp16",
                    # SB -> HAB -> HAB_PIM -> HAB -> SB around every kernel, with park-in/out
                    # (PIMSimulator src/tests/PIMKernel.cpp executeGemv; sieve.dram.pimmode)
                    modes="hbm-pim", park=True,
                    crf_bursts=1,  # GEMV microkernel MAC,JUMP,MAC,JUMP,NOP,EXIT (PIMCmdGen.h)
                    # lane-wise MAC into GRF_B: 16 partial sums per output row, added by the
                    # host (KernelTestCases.h GEMV: readResult + Burst::fp16AdderTree)
                    adder_tree=False,
                    # all-bank mode acts on the even or the odd banks (Rank.cpp: bank % 2 ==
                    # packet->bank); GEMV weights alternate parity by input tile (preloadGemv)
                    bank_parity=True)
    return DramSpec(
        name="samsung-hbm2-pim",
        description="Samsung HBM2-PIM Aquabolt-XL: 1 PU per 2 banks, 16-lane FP16, 4 stacks",
        org=org, timing=timing, bus_ck=_HBM2_BUS, pim=pim,
        sources={
            "timing": "SAITPublic/PIMSimulator ini/HBM2_samsung_2M_16B_x64.ini (RL 20, tRCD 14, "
                      "tRP 14, tRAS 33, tRC 47, tFAW 16, tRFC 350, tREFI 3900)",
            "org": "PIMSimulator README: 1 PIM block per 2 banks, 4 banks x 4 BG per PC; "
                   "64-channel system = 4 stacks (system_hbm_64ch.ini)",
            "nCCDAB": "PIMSimulator issue #3: each PIM op costs tCCD_L",
            "nRTP": "PIMSimulator src/Configuration.h READ_TO_PRE_DELAY = AL + BL/2 + "
                    "max(tRTPL, tCCDL) - tCCDL = 3 (the ini's tRTPL is 5)",
            "nRTW": "PIMSimulator src/Configuration.h READ_TO_WRITE_DELAY = RL + BL/2 + tRTRS "
                    "- WL = 15",
            "pim.gbuf_bytes": "GRF_A 8 x 256-bit per PU (src/PIMBlock.h) = 256 B broadcast",
            "nMACRD": "assumption (one tCCD_L pipeline drain)",
            "pim.modes": "PIMSimulator PIMKernel.cpp (parkIn, changePIMMode, programCrf) and "
                         "Rank.cpp (ABMR 0x17ff, SBMR 0x1fff, register row 0x3fff)",
            "pim.crf_bursts": "PIMSimulator PIMCmdGen.h GEMV: 6 instructions = 1 CRF burst",
            "pim.adder_tree": "PIMSimulator GEMV: lane-wise MAC, host fp16AdderTree",
            "pim.bank_parity": "PIMSimulator src/Rank.cpp (all-bank mode: checkBank / "
                               "updateState on every bank with bank % 2 == packet->bank), "
                               "PIMKernel.cpp preloadGemv / executeGemv (input tile i in "
                               "bank i % 2, even tiles first)",
        },
    )


def _attacc_hbm3_pim(power_constrained: bool) -> DramSpec:
    # AttAcc bank-level HBM3-PIM (scale-snu/attacc_simulator pim_ramulator_src/HBM3-PIM.cpp,
    # preset HBM3_5.2Gbps / _NPC, org HBM3_8Gb_2R; 5 stacks per device as in src/config.py).
    tck = 769  # 1e6 / (5200 / 4)
    ccdab = 6 if power_constrained else 4  # nCCDAB with / without the DRAM power constraint
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=1,
        nBL=2, nCL=19, nCWL=6, nRCDRD=19, nRCDWR=19, nRP=19, nRAS=45, nRC=63, nWR=21,
        nRTP=8,  # nRTPL (bank-level RD->PRE)
        nCCDS=2, nCCDL=4, nCCDR=0, nRRDS=2, nRRDL=4, nFAW=39, nWTRS=8, nWTRL=11,
        nRTW=19 + 2 + 2 - 6,  # AttAcc's rank-level RD->WR row: nCL + nBL + 2 - nCWL
        nPPD=0,
        nRFC=ns_to_ck(350, tck),  # AttAcc tRFC table, 8 Gb density -> 350 ns
        nRFCpb=260, nREFI=5070, nREFIpb=ns_to_ck(122, tck),  # 8-Hi tREFISB 122 ns
        nRREFD=11,
        nCCDAB=ccdab,
        nMACRD=4,  # ⚠ assumption: AttAcc's MVSB (move to softmax buffer) takes 4 tCK
    )
    org = DramOrg(stacks=5, channels=16, pseudochannels=2, sids=2, bankgroups=4, banks=4,
                  rows=16384, columns=32, access_bytes=32, dq_bits=32)
    pim = PimConfig(banks_per_pu=1, lanes=16, dtype_bytes=2, gbuf_bytes=2048,
                    dual_row_buffer=False, pu_dtype="fp16",
                    # PIM_SFM on the buffer die: "SFM: 16tCK (for L = 256)" per channel of 2 PCs
                    # (gen_trace_attacc_bank.py:48,165-169) = 8 scores per CK per PC
                    softmax_per_ck=8)
    suffix = "" if power_constrained else "-npc"
    return DramSpec(
        name=f"attacc-hbm3-pim{suffix}",
        description=("AttAcc bank-level HBM3-PIM 5.2 Gb/s, MAC every "
                     f"{ccdab} CK ({'with' if power_constrained else 'no'} power constraint)"),
        org=org, timing=timing, bus_ck=_HBM2_BUS, pim=pim,
        sources={
            "timing": "attacc_simulator pim_ramulator_src/HBM3-PIM.cpp HBM3_5.2Gbps"
                      + ("" if power_constrained else "_NPC"),
            "org": "AttAcc HBM3_8Gb_2R: 16 ch x 2 PC x 2 ranks x 4 BG x 4 banks; 5 stacks",
            "nCCDAB": "AttAcc nCCDAB 6 (power constraint) / 4 (NPC)",
            "pim.gbuf_bytes": "⚠ assumption: 2 KB global buffer, as SK hynix AiM's per channel",
            "nMACRD": "⚠ assumption: AttAcc trace generator MVSB = 4 tCK",
            "pim.modes": "none: AttAcc's PIM commands are commands of their own, no mode "
                         "register (HBM3-PIM.cpp: SETM/SETH have no timing rows)",
            "pim.adder_tree": "AttAcc gen_trace_attacc_bank.py 'GEMV unit = adder tree mode'",
            "pim.vectors_per_read": "1: one MACAB stream per (head, request); gqa_size is 1 for "
                                    "every model and unused (src/config.py:206-218)",
            "pim.softmax_per_ck": "PIM_SFM 16 tCK per 256 scores per channel "
                                  "(gen_trace_attacc_bank.py:48)",
        },
    )


def _b200_hbm3e_pim(power_constrained: bool) -> DramSpec:
    base = _hbm3e_8000()
    # One 16-lane BF16 PU per bank (bank-level PIM as AttAcc/AiM; hardware.md §5 "B200 HBM3E-PIM
    # variant", derived). Uncapped, every bank delivers a burst per tCCD_L (nCCDAB = nCCDL = 5):
    # 32 banks x 32 B / 2.5 ns = 410 GB/s per PC = 12.8x external. Power-limited: AttAcc's capped
    # / uncapped MAC spacing ratio 6/4 applied to nCCDL -> ceil(7.5) = 8 CK (4 ns), 8x external.
    ccdab = math.ceil(base.timing.nCCDL * 6 / 4) if power_constrained else base.timing.nCCDL
    timing = replace(base.timing, nCCDAB=ccdab,
                     nMACRD=base.timing.nCCDL)  # ⚠ assumption: one tCCD_L pipeline drain
    pim = PimConfig(banks_per_pu=1, lanes=16, dtype_bytes=2, gbuf_bytes=2048,
                    dual_row_buffer=True, pu_dtype="bf16")
    suffix = "" if power_constrained else "-npc"
    return DramSpec(
        name=f"b200-hbm3e-pim{suffix}",
        description=("B200-style HBM3E-PIM: 8 stacks, one 16-lane BF16 PU per bank, all-bank "
                     f"MAC every {ccdab} CK ({'power-limited' if power_constrained else 'no cap'}"
                     "), dual row buffers"),
        org=base.org, timing=timing, bus_ck=base.bus_ck, pim=pim,
        sources={
            **base.sources,
            "nCCDAB": ("derived: AttAcc power-constrained/unconstrained MAC spacing 6/4 x nCCDL"
                       if power_constrained else "derived: nCCDL (one burst per bank per "
                       "tCCD_L)"),
            "pim": "hardware.md §5 derived B200 HBM3E-PIM variant; dual row buffers as NeuPIMs "
                   "(seed §7 'dual row buffers in NeuPIMs')",
            "pim.gbuf_bytes": "⚠ assumption: 2 KB global buffer per PC, as SK hynix AiM",
            "nMACRD": "⚠ assumption: one tCCD_L pipeline drain",
            "pim.modes": "⚠ none: the seed says nothing of mode switches; bank-level PIM as "
                         "AttAcc/AiM, whose PIM commands need no mode change (set "
                         "pim.modes=hbm-pim to study Samsung's protocol)",
            "pim.adder_tree": "bank-level PU with an adder tree, as AttAcc's GEMV unit",
        },
    )


def _neupims_hbm2_pim() -> DramSpec:
    # NeuPIMs (ASPLOS'24) "dual PIM" memory as its simulator runs it: casys-kaist/NeuPIMs@f299af3
    # configs/memory_configs/neupims.json and extern/NewtonSim configs/HBM2_8Gb_x128_dualpim.ini
    # (HBM2 timing, tCK 1 ns, 32 channels x 128 bit, 2 ranks x 4 BG x 4 banks = 32 banks per
    # channel, 1 KB rows, BL4 = 64 B bursts; research notes of 2026-12-01, docs/pim.md).
    tck = 1000
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=1,
        nBL=2,  # burst_cycle = BL / 2 (NewtonSim configuration.cc:173)
        nCL=14, nCWL=4, nRCDRD=14, nRCDWR=14, nRP=14, nRAS=34, nRC=48, nWR=16,
        nRTP=6,  # tRTP_L
        nCCDS=1, nCCDL=2, nCCDR=0, nRRDS=4, nRRDL=6, nFAW=30, nWTRS=6, nWTRL=8,
        nRTW=14 + 2 + 2 - 4,  # nCL + nBL + 2 - nCWL (no tRTW in the ini)
        nPPD=0, nRFC=260, nRFCpb=160, nREFI=3900,
        nREFIpb=128,  # tREFIb
        nRREFD=8,
        # a COMP feeds 16 FP16 (32 B) per bank every max(burst_cycle 2, tCCD_S 1) = 2 tCK
        # (NewtonSim timing.cc:404-409); one 64-B MACAB here = 2 COMPs = 4 tCK
        nCCDAB=4,
        # COMPS_READRES lasts comp_to_comp x (max(num_comps, 6) + 1): the result one COMP
        # interval after the last COMP (NewtonSim channel_state.cc:487-489)
        nMACRD=2,
    )
    # 8 "stacks" of NeuPIMs' 32-channel memory (1.02 TB/s each, about a B200 HBM3E stack):
    # ⚠ ours, to attach it to a B200-class GPU with its 8 stack sites
    org = DramOrg(stacks=8, channels=32, pseudochannels=1, sids=2, bankgroups=4, banks=4,
                  rows=32768, columns=16, access_bytes=64, dq_bits=128)
    pim = PimConfig(banks_per_pu=1, lanes=16, dtype_bytes=2,
                    gbuf_bytes=1024,  # GWRITE copies one DRAM row (1 KB) to the buffer
                    dual_row_buffer=True,  # pim_type = DUAL -> enable_dual_buffer
                    pu_dtype="fp16", vectors_per_read=1)
    return DramSpec(
        name="neupims-hbm2-pim",
        description="NeuPIMs dual-row-buffer bank PIM (HBM2, 1 ns): one 16-MAC PU per bank, "
                    "one query vector per read; 8 stacks of its 32-channel memory",
        org=org, timing=timing, bus_ck=_HBM2_BUS, pim=pim,
        sources={
            "timing": "casys-kaist/NeuPIMs@f299af3 extern/NewtonSim/configs/"
                      "HBM2_8Gb_x128_dualpim.ini:14-39 (CL 14, CWL 4, tRCD 14, tRP 14, tRAS 34, "
                      "tCCD_S/L 1/2, tRRD_S/L 4/6, tFAW 30, tWR 16, tRTP_L 6, tRFC 260, tREFI "
                      "3900, tREFIb 128)",
            "org": "neupims.json (32 channels, 32 banks per channel, 1 KB page); ini (4 BG x "
                   "4 banks, 32768 rows, x128, BL4 = 64 B); 8 stacks ⚠ ours",
            "nCCDAB": "COMP every max(burst_cycle, tCCD_S) = 2 tCK, 16 FP16 per bank "
                      "(pim_comp_coverage 16; NewtonSim timing.cc:404-409); 64 B = 2 COMPs",
            "nMACRD": "NewtonSim channel_state.cc:487-489 (READRES one COMP after the last)",
            "pim.gbuf_bytes": "GWRITE copies a DRAM row to the global buffer (NewtonSim "
                              "README; page 1 KB)",
            "pim.dual_row_buffer": "ini pim_type = DUAL (configuration.cc:154-155)",
            "pim.vectors_per_read": "1: heads looped, one COMP pass per query head; GQA not "
                                    "supported (NeuPIMs src/operations/PIMGEMV.cc:111-148)",
            "pim.adder_tree": "NewtonSim README 'COMP: MAC in the adder tree'",
        },
    )


def _duplex_logic_pim() -> DramSpec:
    # Duplex (MICRO'24) Logic-PIM: GEMM modules on the HBM3 logic die fed through 4x TSVs from
    # "bank bundles" (LLMSimulator paper sources docs/papers/deplex/paper/*.tex, read in the fork
    # shenjiangqiu/LLMSimulator@e400391; its Ramulator patch repeats AttAcc's HBM3 5.2 Gb/s
    # preset; research notes of 2026-12-01).
    base = _attacc_hbm3_pim(True)
    # bundle ALL-RD -> ALL-RD every nCCDL (LLMSimulator patch/ramulator2_pim.patch:3050)
    timing = replace(base.timing, nCCDAB=base.timing.nCCDL,
                     nMACRD=base.timing.nCCDL)  # ⚠ assumption: one tCCD_L pipeline drain
    pim = PimConfig(
        # 512 bits from two banks per bank group every tCCD_L (4_contribution-1.tex:80): per
        # pseudo-channel 4 BG x 64 B = 8 bursts per tCCD_L, = 8 PUs of 4 banks each here
        banks_per_pu=4, lanes=16, dtype_bytes=2,
        gbuf_bytes=8192,  # "each module ... 512 FP16 MACs ... and a 8KB buffer" (7_eval:140)
        dual_row_buffer=False, pu_dtype="fp16",
        # op/B 8 (6_experimental_setup.tex:8): 512 MACs x 650 MHz per module = 8 MACs per FP16
        # element read, one per query head of a GQA-8 group (1_introduction.tex:48)
        vectors_per_read=8,
        # the logic-die softmax unit (4_contribution-1.tex:107-109; 1.64 mm2, 128 KB buffers):
        # its rate is not given, AttAcc's PIM_SFM rate is used ⚠
        softmax_per_ck=8,
        # bank bundles (4_contribution-1.tex:73-80, 93-96): Logic-PIM reads one bundle at a
        # time, so the others can switch rows meanwhile; a bundle per SID (rank) here ⚠
        bundles=2)
    return DramSpec(
        name="duplex-logic-pim",
        description="Duplex Logic-PIM (HBM3 5.2 Gb/s, 5 stacks): logic-die GEMM modules at 4x "
                    "external bandwidth, 8 vectors per read (op/B 8, GQA-8)",
        org=base.org, timing=timing, bus_ck=base.bus_ck, pim=pim,
        sources={
            "timing": "AttAcc HBM3_5.2Gbps (attacc_simulator HBM3-PIM.cpp:32-36), repeated in "
                      "LLMSimulator patch/ramulator2_pim.patch:2769; nRFC 350 ns (tRFC table, "
                      "8 Gb)",
            "org": "Duplex 6_experimental_setup.tex:6 (16 GB 8-Hi = two ranks per stack, 80 GB "
                   "per device = 5 stacks); LLMSimulator memory_config.h (32 channels = 16 x 2 "
                   "PC, 2 ranks, 4 BG x 4, 16384 rows, 32 cols x 32 B)",
            "nCCDAB": "bundle ALL-RD every nCCDL (patch:3050); 4x external bandwidth "
                      "(4_contribution-1.tex:54,70-71)",
            "pim.banks_per_pu": "derived: 512 b from 2 banks per bank group per tCCD_L "
                                "(4_contribution-1.tex:80) = 8 bursts per PC per tCCD_L",
            "pim.gbuf_bytes": "8 KB buffer per GEMM module, one module per PC (7_evaluation.tex"
                              ":140; 32 modules per stack = 16 ch x 2 PC)",
            "pim.vectors_per_read": "op/B 8 = 8 MACs per FP16 element (6_experimental_setup.tex"
                                    ":8; 21.3 TFLOPS per stack = 32 x 512 x 2 x 650 MHz)",
            "pim.cost": "17.80 mm2 per stack = 14.71 % of a 121 mm2 HBM3 logic die (TSVs 10.89,"
                        " GEMM modules 3.02, buffers 2.26, softmax 1.64; 7_evaluation.tex:137-143)",
            "pim.modes": "none (logic-die units driven by their own commands)",
            "pim.softmax_per_ck": "softmax unit on the logic die (4_contribution-1.tex:107-109);"
                                  " rate ⚠ AttAcc's PIM_SFM (8 scores per CK per PC)",
            "pim.adder_tree": "GEMM modules reduce on the logic die",
            "pim.bundles": "bank bundles (4_contribution-1.tex:73-80, 93-96: 'each group of "
                           "eight banks operate as one unit, which we refer to as bank bundle'; "
                           "'four bank bundles, organized into two ranks'): the PUs read one "
                           "bundle at a time and the others switch rows meanwhile; ⚠ one "
                           "bundle per SID (rank, 16 banks) instead of Duplex's two per rank: "
                           "the same overlap of a bundle's row switch (nRTP + nRP + nRCD = 46 "
                           "CK) behind the other's stream (64 MACs x nCCDAB = 256 CK)",
        },
    )


def _b200_logic_pim() -> DramSpec:
    # Duplex's Logic-PIM organisation on the B200's HBM3E stacks (derived, ⚠ not a product):
    # 8 PUs of 4 banks per PC read one burst each per tCCD_L (two banks per bank group, as
    # Logic-PIM), 8 vectors per read (op/B 8), 8 KB buffer per PC, dual row buffers (seed §7).
    base = _hbm3e_8000()
    timing = replace(base.timing, nCCDAB=base.timing.nCCDL,
                     nMACRD=base.timing.nCCDL)  # ⚠ assumption: one tCCD_L pipeline drain
    pim = PimConfig(banks_per_pu=4, lanes=16, dtype_bytes=2, gbuf_bytes=8192,
                    dual_row_buffer=True, pu_dtype="bf16", vectors_per_read=8,
                    softmax_per_ck=8,  # Logic-PIM's softmax unit, AttAcc's rate ⚠
                    bundles=2)  # Logic-PIM's bank bundles, one per SID (as duplex-logic-pim)
    return DramSpec(
        name="b200-logic-pim",
        description="Duplex-style Logic-PIM on B200 HBM3E (8 stacks): 8 PUs of 4 banks per PC, "
                    "8 vectors per read (GQA-8), dual row buffers",
        org=base.org, timing=timing, bus_ck=base.bus_ck, pim=pim,
        sources={
            **base.sources,
            "nCCDAB": "derived: Logic-PIM's bundle read every nCCDL (Duplex; LLMSimulator patch"
                      ":3050) on HBM3E: 8 x 32 B / 2.5 ns = 102 GB/s per PC = 3.2x external "
                      "(4x on HBM3, where nCCDL = 2 nBL)",
            "pim": "derived from duplex-logic-pim (banks_per_pu 4, vectors_per_read 8, 8 KB "
                   "buffer per PC); dual row buffers as NeuPIMs (seed §7)",
            "pim.cost": "as Duplex Logic-PIM: ~18 mm2 of the logic die per stack (7_evaluation"
                        ".tex:137-143), scaled to HBM3E ⚠",
            "nMACRD": "⚠ assumption: one tCCD_L pipeline drain",
            "pim.modes": "none",
            "pim.bundles": "as duplex-logic-pim: one bank bundle per SID, read one at a time",
        },
    )


PRESETS: dict[str, DramSpec] = {
    s.name: s
    for s in (
        _b200_hbm3e_pim(True),
        _b200_hbm3e_pim(False),
        _hbm3e_8000(),
        _hbm3_6400(),
        _hbm2_2000(),
        _attacc_hbm3_pim(True),
        _attacc_hbm3_pim(False),
        _samsung_hbm2_pim(),
        _neupims_hbm2_pim(),
        _duplex_logic_pim(),
        _b200_logic_pim(),
    )
}
DEFAULT_SPEC = "b200-hbm3e-pim"
#: The plain-DRAM spec of ``sieve dram`` and ``sieve check`` when none is named: HBM3-6400, the
#: twin of Ramulator 2.1's HBM3_6400Mbps, so that the same trace runs side by side with it
#: (shared/reference/ramulator2.md §2).
DEFAULT_DRAM_SPEC = "hbm3-6400"


def get_spec(name_or_spec: str | DramSpec, overrides: Mapping[str, Any] | None = None
             ) -> DramSpec:
    """Return a preset (or a spec file path ending in .json/.toml), with optional overrides.

    Raises:
        ConfigError: unknown preset (lists the known ones), unreadable or invalid spec file, or
            an unknown or impossible override (names the field and the valid range or names).
    """
    if isinstance(name_or_spec, DramSpec):
        spec = name_or_spec
    elif isinstance(name_or_spec, (str, Path)) and str(name_or_spec).lower().endswith(
            (".json", ".toml")):
        spec = load_spec(name_or_spec)
    else:
        spec = lookup(PRESETS, name_or_spec, "DRAM spec")
    if overrides is None:
        return spec
    overrides = check_mapping(f"DRAM spec {spec.name!r}", "overrides", overrides)
    return spec.override(overrides) if overrides else spec


#: Spec files may name another spec file as their ``base``; a chain this long is a mistake.
MAX_BASE_DEPTH = 16


def load_spec(path: str | Path, _chain: tuple[Path, ...] = ()) -> DramSpec:
    """Load a spec from JSON or TOML: ``{"base": "hbm3-6400", "name": ..., "overrides": {...}}``.

    ``base`` is a preset name or another spec file; a relative file name is resolved against
    the folder of the file that names it (not the working directory). Top-level keys other than
    ``base`` and ``overrides`` are treated as overrides too; ``name`` defaults to the file's
    stem. Files must be UTF-8.

    Raises:
        ConfigError: unreadable, not UTF-8, not valid JSON/TOML, a ``base`` chain that loops or
            is deeper than :data:`MAX_BASE_DEPTH`, or an invalid value (names the file and the
            field).
    """
    p = Path(path)
    who = f"DRAM spec file {str(p)!r}"
    key = p.resolve()
    if key in _chain:
        loop = " -> ".join(str(x) for x in (*_chain, key))
        raise ConfigError(f"{who}: 'base' chain loops back to a file already loading ({loop})")
    if len(_chain) >= MAX_BASE_DEPTH:
        raise ConfigError(f"{who}: 'base' chain deeper than {MAX_BASE_DEPTH} files")
    data = parse_document(read_text(p, "DRAM spec file"), p, "DRAM spec file")
    if not isinstance(data, dict):
        raise ConfigError(f"{who}: expected a table/object at top level")
    data = dict(data)
    base = data.pop("base", None)
    if base is None:
        raise ConfigError(f"{who}: missing 'base' (one of: {choices(PRESETS)}, or a spec file)")
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"{who}: 'base' must be a preset name ({choices(PRESETS)}) or a "
                          f"spec file, got {base!r}")
    overrides = check_mapping(who, "'overrides'", data.pop("overrides", None) or {})
    overrides.update(data)
    overrides.setdefault("name", p.stem)
    try:
        if base.lower().endswith((".json", ".toml")):
            bp = Path(base)
            base_spec = load_spec(bp if bp.is_absolute() else p.parent / bp, (*_chain, key))
        else:
            base_spec = lookup(PRESETS, base, "DRAM spec")
        return base_spec.override(overrides)
    except ConfigError as exc:
        msg = str(exc)
        if msg.startswith("DRAM spec file "):
            raise  # a base file's own error already names that file
        raise ConfigError(f"{who}: {msg}") from None
