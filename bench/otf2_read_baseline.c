/*
 * otf2_read_baseline.c - libotf2 read-throughput baseline for bench/run.sh.
 *
 * Reads every event of an OTF2 archive with libotf2's global (time-merged)
 * event reader, the way a typical libotf2 tool does, with callbacks that do
 * nothing but count: one callback per event kind known to the library plus the
 * "unknown" callback. This mirrors "libotf2 3.0, global event reader, empty
 * callbacks".
 *
 *   build: gcc -O2 bench/otf2_read_baseline.c -lotf2 -o bench/out/otf2_read_baseline
 *   usage: otf2_read_baseline path/to/traces.otf2
 *   output (one line on stdout):
 *     events=N expected=M read_seconds=S seconds=T
 *   N = events delivered to the callbacks, M = sum of the numberOfEvents fields
 *   of the Location definitions, S = wall time of OTF2_Reader_ReadAllGlobalEvents
 *   alone, T = wall time from OTF2_Reader_Open to OTF2_Reader_Close.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <otf2/otf2.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check(OTF2_ErrorCode status, const char* what)
{
    if (status != OTF2_SUCCESS) {
        fprintf(stderr, "otf2_read_baseline: %s failed: %s: %s\n", what,
                OTF2_Error_GetName(status), OTF2_Error_GetDescription(status));
        exit(1);
    }
}

/* ---- global definitions: collect the locations ---- */

struct locations {
    OTF2_LocationRef* ids;
    size_t len, cap;
    uint64_t expected_events;
};

static OTF2_CallbackCode on_location(void* user_data, OTF2_LocationRef self, OTF2_StringRef name,
                                     OTF2_LocationType location_type, uint64_t number_of_events,
                                     OTF2_LocationGroupRef location_group)
{
    struct locations* locs = user_data;
    (void)name; (void)location_type; (void)location_group;
    if (locs->len == locs->cap) {
        locs->cap = locs->cap ? 2 * locs->cap : 64;
        locs->ids = realloc(locs->ids, locs->cap * sizeof *locs->ids);
        if (!locs->ids) { perror("realloc"); exit(1); }
    }
    locs->ids[locs->len++] = self;
    locs->expected_events += number_of_events;
    return OTF2_CALLBACK_SUCCESS;
}

/* ---- events: one counting callback per event kind ----
 * The list below is every OTF2_GlobalEvtReaderCallback_* type of libotf2 3.0
 * (taken from OTF2_GlobalEvtReaderCallbacks.h), as (kind, fields after the
 * common locationID, time, userData, attributeList arguments). */
#define EVENT_KINDS(X, X0) \
    X( BufferFlush, OTF2_TimeStamp stopTime ) \
    X( MeasurementOnOff, OTF2_MeasurementMode measurementMode ) \
    X( Enter, OTF2_RegionRef region ) \
    X( Leave, OTF2_RegionRef region ) \
    X( MpiSend, uint32_t receiver, OTF2_CommRef communicator, uint32_t msgTag, uint64_t msgLength ) \
    X( MpiIsend, uint32_t receiver, OTF2_CommRef communicator, uint32_t msgTag, uint64_t msgLength, uint64_t requestID ) \
    X( MpiIsendComplete, uint64_t requestID ) \
    X( MpiIrecvRequest, uint64_t requestID ) \
    X( MpiRecv, uint32_t sender, OTF2_CommRef communicator, uint32_t msgTag, uint64_t msgLength ) \
    X( MpiIrecv, uint32_t sender, OTF2_CommRef communicator, uint32_t msgTag, uint64_t msgLength, uint64_t requestID ) \
    X( MpiRequestTest, uint64_t requestID ) \
    X( MpiRequestCancelled, uint64_t requestID ) \
    X0( MpiCollectiveBegin ) \
    X( MpiCollectiveEnd, OTF2_CollectiveOp collectiveOp, OTF2_CommRef communicator, uint32_t root, uint64_t sizeSent, uint64_t sizeReceived ) \
    X( OmpFork, uint32_t numberOfRequestedThreads ) \
    X0( OmpJoin ) \
    X( OmpAcquireLock, uint32_t lockID, uint32_t acquisitionOrder ) \
    X( OmpReleaseLock, uint32_t lockID, uint32_t acquisitionOrder ) \
    X( OmpTaskCreate, uint64_t taskID ) \
    X( OmpTaskSwitch, uint64_t taskID ) \
    X( OmpTaskComplete, uint64_t taskID ) \
    X( Metric, OTF2_MetricRef metric, uint8_t numberOfMetrics, const OTF2_Type* typeIDs, const OTF2_MetricValue* metricValues ) \
    X( ParameterString, OTF2_ParameterRef parameter, OTF2_StringRef string ) \
    X( ParameterInt, OTF2_ParameterRef parameter, int64_t value ) \
    X( ParameterUnsignedInt, OTF2_ParameterRef parameter, uint64_t value ) \
    X( RmaWinCreate, OTF2_RmaWinRef win ) \
    X( RmaWinDestroy, OTF2_RmaWinRef win ) \
    X0( RmaCollectiveBegin ) \
    X( RmaCollectiveEnd, OTF2_CollectiveOp collectiveOp, OTF2_RmaSyncLevel syncLevel, OTF2_RmaWinRef win, uint32_t root, uint64_t bytesSent, uint64_t bytesReceived ) \
    X( RmaGroupSync, OTF2_RmaSyncLevel syncLevel, OTF2_RmaWinRef win, OTF2_GroupRef group ) \
    X( RmaRequestLock, OTF2_RmaWinRef win, uint32_t remote, uint64_t lockId, OTF2_LockType lockType ) \
    X( RmaAcquireLock, OTF2_RmaWinRef win, uint32_t remote, uint64_t lockId, OTF2_LockType lockType ) \
    X( RmaTryLock, OTF2_RmaWinRef win, uint32_t remote, uint64_t lockId, OTF2_LockType lockType ) \
    X( RmaReleaseLock, OTF2_RmaWinRef win, uint32_t remote, uint64_t lockId ) \
    X( RmaSync, OTF2_RmaWinRef win, uint32_t remote, OTF2_RmaSyncType syncType ) \
    X( RmaWaitChange, OTF2_RmaWinRef win ) \
    X( RmaPut, OTF2_RmaWinRef win, uint32_t remote, uint64_t bytes, uint64_t matchingId ) \
    X( RmaGet, OTF2_RmaWinRef win, uint32_t remote, uint64_t bytes, uint64_t matchingId ) \
    X( RmaAtomic, OTF2_RmaWinRef win, uint32_t remote, OTF2_RmaAtomicType type, uint64_t bytesSent, uint64_t bytesReceived, uint64_t matchingId ) \
    X( RmaOpCompleteBlocking, OTF2_RmaWinRef win, uint64_t matchingId ) \
    X( RmaOpCompleteNonBlocking, OTF2_RmaWinRef win, uint64_t matchingId ) \
    X( RmaOpTest, OTF2_RmaWinRef win, uint64_t matchingId ) \
    X( RmaOpCompleteRemote, OTF2_RmaWinRef win, uint64_t matchingId ) \
    X( ThreadFork, OTF2_Paradigm model, uint32_t numberOfRequestedThreads ) \
    X( ThreadJoin, OTF2_Paradigm model ) \
    X( ThreadTeamBegin, OTF2_CommRef threadTeam ) \
    X( ThreadTeamEnd, OTF2_CommRef threadTeam ) \
    X( ThreadAcquireLock, OTF2_Paradigm model, uint32_t lockID, uint32_t acquisitionOrder ) \
    X( ThreadReleaseLock, OTF2_Paradigm model, uint32_t lockID, uint32_t acquisitionOrder ) \
    X( ThreadTaskCreate, OTF2_CommRef threadTeam, uint32_t creatingThread, uint32_t generationNumber ) \
    X( ThreadTaskSwitch, OTF2_CommRef threadTeam, uint32_t creatingThread, uint32_t generationNumber ) \
    X( ThreadTaskComplete, OTF2_CommRef threadTeam, uint32_t creatingThread, uint32_t generationNumber ) \
    X( ThreadCreate, OTF2_CommRef threadContingent, uint64_t sequenceCount ) \
    X( ThreadBegin, OTF2_CommRef threadContingent, uint64_t sequenceCount ) \
    X( ThreadWait, OTF2_CommRef threadContingent, uint64_t sequenceCount ) \
    X( ThreadEnd, OTF2_CommRef threadContingent, uint64_t sequenceCount ) \
    X( CallingContextEnter, OTF2_CallingContextRef callingContext, uint32_t unwindDistance ) \
    X( CallingContextLeave, OTF2_CallingContextRef callingContext ) \
    X( CallingContextSample, OTF2_CallingContextRef callingContext, uint32_t unwindDistance, OTF2_InterruptGeneratorRef interruptGenerator ) \
    X( IoCreateHandle, OTF2_IoHandleRef handle, OTF2_IoAccessMode mode, OTF2_IoCreationFlag creationFlags, OTF2_IoStatusFlag statusFlags ) \
    X( IoDestroyHandle, OTF2_IoHandleRef handle ) \
    X( IoDuplicateHandle, OTF2_IoHandleRef oldHandle, OTF2_IoHandleRef newHandle, OTF2_IoStatusFlag statusFlags ) \
    X( IoSeek, OTF2_IoHandleRef handle, int64_t offsetRequest, OTF2_IoSeekOption whence, uint64_t offsetResult ) \
    X( IoChangeStatusFlags, OTF2_IoHandleRef handle, OTF2_IoStatusFlag statusFlags ) \
    X( IoDeleteFile, OTF2_IoParadigmRef ioParadigm, OTF2_IoFileRef file ) \
    X( IoOperationBegin, OTF2_IoHandleRef handle, OTF2_IoOperationMode mode, OTF2_IoOperationFlag operationFlags, uint64_t bytesRequest, uint64_t matchingId ) \
    X( IoOperationTest, OTF2_IoHandleRef handle, uint64_t matchingId ) \
    X( IoOperationIssued, OTF2_IoHandleRef handle, uint64_t matchingId ) \
    X( IoOperationComplete, OTF2_IoHandleRef handle, uint64_t bytesResult, uint64_t matchingId ) \
    X( IoOperationCancelled, OTF2_IoHandleRef handle, uint64_t matchingId ) \
    X( IoAcquireLock, OTF2_IoHandleRef handle, OTF2_LockType lockType ) \
    X( IoReleaseLock, OTF2_IoHandleRef handle, OTF2_LockType lockType ) \
    X( IoTryLock, OTF2_IoHandleRef handle, OTF2_LockType lockType ) \
    X( ProgramBegin, OTF2_StringRef programName, uint32_t numberOfArguments, const OTF2_StringRef* programArguments ) \
    X( ProgramEnd, int64_t exitStatus ) \
    X( NonBlockingCollectiveRequest, uint64_t requestID ) \
    X( NonBlockingCollectiveComplete, OTF2_CollectiveOp collectiveOp, OTF2_CommRef communicator, uint32_t root, uint64_t sizeSent, uint64_t sizeReceived, uint64_t requestID ) \
    X( CommCreate, OTF2_CommRef communicator ) \
    X( CommDestroy, OTF2_CommRef communicator )

#define COMMON_ARGS OTF2_LocationRef location, OTF2_TimeStamp time, void* user_data, \
                    OTF2_AttributeList* attributes
#define COUNT_BODY { (void)location; (void)time; (void)attributes; \
                     ++*(uint64_t*)user_data; return OTF2_CALLBACK_SUCCESS; }
#define DEFINE_CB(kind, ...) static OTF2_CallbackCode on_##kind(COMMON_ARGS, __VA_ARGS__) COUNT_BODY
#define DEFINE_CB0(kind) static OTF2_CallbackCode on_##kind(COMMON_ARGS) COUNT_BODY
DEFINE_CB0(Unknown)
EVENT_KINDS(DEFINE_CB, DEFINE_CB0)

#define REGISTER_CB(kind, ...) \
    check(OTF2_GlobalEvtReaderCallbacks_Set##kind##Callback(cbs, on_##kind), "Set" #kind "Callback");
#define REGISTER_CB0(kind) REGISTER_CB(kind)

int main(int argc, char** argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s path/to/traces.otf2\n", argv[0]);
        return 2;
    }
    double t0 = now();

    OTF2_Reader* reader = OTF2_Reader_Open(argv[1]);
    if (!reader) {
        fprintf(stderr, "otf2_read_baseline: cannot open %s\n", argv[1]);
        return 1;
    }
    check(OTF2_Reader_SetSerialCollectiveCallbacks(reader), "OTF2_Reader_SetSerialCollectiveCallbacks");

    /* Global definitions: only the locations are of interest. */
    struct locations locs = { 0 };
    OTF2_GlobalDefReader* gdr = OTF2_Reader_GetGlobalDefReader(reader);
    if (!gdr) { fprintf(stderr, "otf2_read_baseline: no global definition reader\n"); return 1; }
    OTF2_GlobalDefReaderCallbacks* gdcbs = OTF2_GlobalDefReaderCallbacks_New();
    check(OTF2_GlobalDefReaderCallbacks_SetLocationCallback(gdcbs, on_location), "SetLocationCallback");
    check(OTF2_Reader_RegisterGlobalDefCallbacks(reader, gdr, gdcbs, &locs), "RegisterGlobalDefCallbacks");
    OTF2_GlobalDefReaderCallbacks_Delete(gdcbs);
    uint64_t defs_read = 0;
    check(OTF2_Reader_ReadAllGlobalDefinitions(reader, gdr, &defs_read), "ReadAllGlobalDefinitions");
    check(OTF2_Reader_CloseGlobalDefReader(reader, gdr), "CloseGlobalDefReader");

    /* Select every location, open the local files, read the local definitions
     * (mapping tables, if any) and create the local event readers. */
    for (size_t i = 0; i < locs.len; i++)
        check(OTF2_Reader_SelectLocation(reader, locs.ids[i]), "SelectLocation");
    int have_def_files = OTF2_Reader_OpenDefFiles(reader) == OTF2_SUCCESS;
    check(OTF2_Reader_OpenEvtFiles(reader), "OpenEvtFiles");
    for (size_t i = 0; i < locs.len; i++) {
        if (have_def_files) {
            OTF2_DefReader* dr = OTF2_Reader_GetDefReader(reader, locs.ids[i]);
            if (dr) {
                uint64_t n = 0;
                check(OTF2_Reader_ReadAllLocalDefinitions(reader, dr, &n), "ReadAllLocalDefinitions");
                check(OTF2_Reader_CloseDefReader(reader, dr), "CloseDefReader");
            }
        }
        if (!OTF2_Reader_GetEvtReader(reader, locs.ids[i])) {
            fprintf(stderr, "otf2_read_baseline: no event reader for location %" PRIu64 "\n",
                    (uint64_t)locs.ids[i]);
            return 1;
        }
    }
    if (have_def_files)
        check(OTF2_Reader_CloseDefFiles(reader), "CloseDefFiles");

    /* The global event reader merges all locations by time. */
    OTF2_GlobalEvtReader* ger = OTF2_Reader_GetGlobalEvtReader(reader);
    if (!ger) { fprintf(stderr, "otf2_read_baseline: no global event reader\n"); return 1; }
    OTF2_GlobalEvtReaderCallbacks* cbs = OTF2_GlobalEvtReaderCallbacks_New();
    REGISTER_CB0(Unknown)
    EVENT_KINDS(REGISTER_CB, REGISTER_CB0)
    uint64_t counted = 0;
    check(OTF2_Reader_RegisterGlobalEvtCallbacks(reader, ger, cbs, &counted), "RegisterGlobalEvtCallbacks");
    OTF2_GlobalEvtReaderCallbacks_Delete(cbs);

    double r0 = now();
    uint64_t events_read = 0;
    check(OTF2_Reader_ReadAllGlobalEvents(reader, ger, &events_read), "ReadAllGlobalEvents");
    double r1 = now();

    check(OTF2_Reader_CloseGlobalEvtReader(reader, ger), "CloseGlobalEvtReader");
    check(OTF2_Reader_CloseEvtFiles(reader), "CloseEvtFiles");
    check(OTF2_Reader_Close(reader), "OTF2_Reader_Close");
    double t1 = now();

    if (events_read != counted)
        fprintf(stderr, "otf2_read_baseline: warning: libotf2 reports %" PRIu64
                " events read but the callbacks saw %" PRIu64 "\n", events_read, counted);
    printf("events=%" PRIu64 " expected=%" PRIu64 " read_seconds=%.3f seconds=%.3f\n",
           counted, locs.expected_events, r1 - r0, t1 - t0);
    free(locs.ids);
    return 0;
}
