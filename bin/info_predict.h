/* xcoll-info --predict (info_predict.c). */
#ifndef XCOLL_INFO_PREDICT_H
#define XCOLL_INFO_PREDICT_H

/* argv: the arguments after --predict. Returns the exit status. */
int info_predict(int argc, char **argv);

#endif
